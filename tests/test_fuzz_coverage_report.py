"""scripts/fuzz.py's report of the answers each operation got: the run fails when an operation of
the schema never got a 2xx (issue 28), unless NEVER_2XX lists it with its reason, and when a
listed one did get one (the list cannot outlive its reason)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fuzz(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("fuzz_script", ROOT / "scripts" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPORT_DIR", tmp_path)
    monkeypatch.setattr(module, "NEVER_2XX", {"payment_methods_create": "needs Stripe"})
    return module


def counted(directory: Path, tag: str, counts: dict) -> None:
    (directory / f"coverage-{tag}.json").write_text(json.dumps(counts))


def test_it_passes_when_every_operation_got_a_2xx_in_some_pass(fuzz, tmp_path, capsys):
    counted(tmp_path, "main", {"servers_list": {"200": 3, "400": 9}, "tickets_create": {"400": 5}})
    counted(tmp_path, "stateful", {"tickets_create": {"201": 1}})

    failed = fuzz.coverage_report(
        ["payment_methods_create", "servers_list", "tickets_create"], ["main", "stateful"]
    )

    assert failed == 0
    report = (tmp_path / "coverage.txt").read_text()
    assert "     3 2xx of     12  servers_list  (200:3 400:9)" in report
    assert "     1 2xx of      6  tickets_create  (201:1 400:5)" in report
    assert "payment_methods_create  (never called)" in report


def test_it_fails_when_an_operation_never_got_a_2xx(fuzz, tmp_path, capsys):
    counted(tmp_path, "main", {"servers_list": {"200": 3}, "tickets_create": {"404": 150}})

    failed = fuzz.coverage_report(["servers_list", "tickets_create", "agent_hello"], ["main"])

    assert failed == 1
    out = capsys.readouterr().out
    assert "tickets_create never got a 2xx" in out
    assert "agent_hello never got a 2xx" in out  # never called at all
    assert "servers_list never" not in out


def test_it_fails_when_an_operation_it_lists_as_never_2xx_got_one(fuzz, tmp_path, capsys):
    counted(tmp_path, "main", {"payment_methods_create": {"201": 1}})

    failed = fuzz.coverage_report(["payment_methods_create"], ["main"])

    assert failed == 1
    assert "take it off the list" in capsys.readouterr().out


def test_it_never_drops_a_database_that_is_not_the_fuzzers(fuzz):
    with pytest.raises(SystemExit, match="does not look like one made for it"):
        fuzz.reset_database("postgres://postgres@127.0.0.1:5432/hosting")
