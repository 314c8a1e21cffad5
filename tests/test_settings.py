"""Settings come from the environment and a bad value stops start-up naming the variable."""

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from hosting.env import env_bool, env_int, env_list, env_str, parse_peppers

PEPPER_A = "a" * 32
PEPPER_B = "b" * 40
VALID_PEPPERS = (
    "t2=test-pepper-two-for-the-test-suite-only,t1=test-pepper-one-for-the-test-suite-only"
)


# --- hosting/env.py ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("on", True),
        (" On ", True),
        ("false", False),
        ("False", False),
        ("0", False),
        ("no", False),
        ("off", False),
    ],
)
def test_env_bool_accepts_the_documented_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("HMS_TEST_FLAG", raw)

    assert env_bool("HMS_TEST_FLAG", not expected) is expected


@pytest.mark.parametrize("default", [True, False])
def test_env_bool_falls_back_to_the_default_when_unset(monkeypatch, default):
    monkeypatch.delenv("HMS_TEST_FLAG", raising=False)

    assert env_bool("HMS_TEST_FLAG", default) is default


def test_env_bool_rejects_an_unknown_value_naming_the_variable(monkeypatch):
    monkeypatch.setenv("HMS_TEST_FLAG", "maybe")

    with pytest.raises(ImproperlyConfigured, match=r"HMS_TEST_FLAG.*'maybe'"):
        env_bool("HMS_TEST_FLAG", False)


def test_env_int_parses_an_integer(monkeypatch):
    monkeypatch.setenv("HMS_TEST_NUMBER", " 42 ")

    assert env_int("HMS_TEST_NUMBER", 7, minimum=1) == 42


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_env_int_falls_back_to_the_default_when_unset_or_blank(monkeypatch, raw):
    if raw is None:
        monkeypatch.delenv("HMS_TEST_NUMBER", raising=False)
    else:
        monkeypatch.setenv("HMS_TEST_NUMBER", raw)

    assert env_int("HMS_TEST_NUMBER", 7) == 7


@pytest.mark.parametrize("raw", ["abc", "1.5", "10k"])
def test_env_int_rejects_a_non_integer_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("HMS_TEST_NUMBER", raw)

    with pytest.raises(ImproperlyConfigured, match=r"HMS_TEST_NUMBER must be an integer"):
        env_int("HMS_TEST_NUMBER", 7)


def test_env_int_rejects_a_value_below_the_minimum(monkeypatch):
    monkeypatch.setenv("HMS_TEST_NUMBER", "0")

    with pytest.raises(ImproperlyConfigured, match=r"HMS_TEST_NUMBER must be at least 1, got 0"):
        env_int("HMS_TEST_NUMBER", 7, minimum=1)


def test_env_int_accepts_the_minimum_itself(monkeypatch):
    monkeypatch.setenv("HMS_TEST_NUMBER", "0")

    assert env_int("HMS_TEST_NUMBER", 7, minimum=0) == 0


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch):
    monkeypatch.setenv("HMS_TEST_LIST", " api.example.com, ,example.com,")

    assert env_list("HMS_TEST_LIST", ["default"]) == ["api.example.com", "example.com"]


def test_env_list_falls_back_to_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("HMS_TEST_LIST", raising=False)

    assert env_list("HMS_TEST_LIST", ["default"]) == ["default"]


def test_env_list_is_empty_for_an_empty_value(monkeypatch):
    monkeypatch.setenv("HMS_TEST_LIST", "")

    assert env_list("HMS_TEST_LIST", ["default"]) == []


def test_env_str_strips_and_defaults(monkeypatch):
    monkeypatch.setenv("HMS_TEST_TEXT", "  value  ")
    assert env_str("HMS_TEST_TEXT") == "value"

    monkeypatch.delenv("HMS_TEST_TEXT")
    assert env_str("HMS_TEST_TEXT", "fallback") == "fallback"


def test_parse_peppers_keeps_the_order_with_the_current_pepper_first():
    peppers = parse_peppers("API_KEY_PEPPERS", f" b2={PEPPER_B} , a1={PEPPER_A}")

    assert peppers == {"b2": PEPPER_B, "a1": PEPPER_A}
    assert list(peppers) == ["b2", "a1"]
    assert next(iter(peppers)) == "b2"


def test_parse_peppers_keeps_an_equals_sign_inside_the_secret():
    secret = "x" * 31 + "=="

    assert parse_peppers("API_KEY_PEPPERS", f"p1={secret}") == {"p1": secret}


def test_parse_peppers_rejects_a_short_pepper():
    with pytest.raises(ImproperlyConfigured, match=r"API_KEY_PEPPERS.*'short'.*at least 32"):
        parse_peppers("API_KEY_PEPPERS", f"good={PEPPER_A},short={'s' * 31}")


def test_parse_peppers_rejects_an_entry_without_an_id():
    with pytest.raises(ImproperlyConfigured, match=r"API_KEY_PEPPERS entries must look like"):
        parse_peppers("API_KEY_PEPPERS", PEPPER_A)


@pytest.mark.parametrize("pepper_id", ["", "bad-id", "x" * 17])
def test_parse_peppers_rejects_an_invalid_id(pepper_id):
    with pytest.raises(ImproperlyConfigured, match=r"API_KEY_PEPPERS entries must look like"):
        parse_peppers("API_KEY_PEPPERS", f"{pepper_id}={PEPPER_A}")


def test_parse_peppers_rejects_a_duplicate_id():
    with pytest.raises(ImproperlyConfigured, match=r"API_KEY_PEPPERS.*'a1' appears twice"):
        parse_peppers("API_KEY_PEPPERS", f"a1={PEPPER_A},a1={PEPPER_B}")


@pytest.mark.parametrize("raw", ["", " , ,"])
def test_parse_peppers_rejects_an_empty_list(raw):
    with pytest.raises(ImproperlyConfigured, match=r"API_KEY_PEPPERS must list at least one"):
        parse_peppers("API_KEY_PEPPERS", raw)


# --- Importing hosting.settings in a fresh process ---------------------------------------------

SETUP = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='hosting.settings'; django.setup()"
# Variables hosting/settings.py reads; each run starts from none of them but the ones it sets.
SETTINGS_VARIABLES = [
    "DEBUG",
    "SECRET_KEY",
    "API_KEY_PEPPERS",
    "DATABASE_URL",
    "DATABASE_CONN_MAX_AGE",
    "REDIS_URL",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "VAR_DIR",
    "STATIC_ROOT",
    "TRUST_X_FORWARDED_PROTO",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "RATE_LIMIT_PER_MINUTE",
    "RATE_LIMIT_ANON_PER_MINUTE",
    "RATE_LIMIT_SQLITE_PATH",
    "NUM_PROXIES",
    "LOG_LEVEL",
    "DJANGO_SETTINGS_MODULE",
    "SECRET_ENCRYPTION_KEYS",
    "DATABASE_PREPARED_STATEMENTS",
    "EMAIL_HOST",
    "EMAIL_CONSOLE_ALLOWED",
    "BILLING_SELLER_NAME",
    "BILLING_SELLER_ADDRESS",
    "BILLING_SELLER_COUNTRY",
    "BILLING_SELLER_VAT_ID",
    "BILLING_SELLER_EMAIL",
    "BILLING_SELLER_IBAN",
    "BILLING_SELLER_BIC",
    "BILLING_SELLER_ACCOUNT_HOLDER",
    "BILLING_INVOICE_PREFIX",
    "BILLING_CREDIT_NOTE_PREFIX",
    "BILLING_DAYS_UNTIL_DUE",
]


def start_django(
    tmp_path, code: str = SETUP, **overrides: str | None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env["VAR_DIR"] = str(tmp_path)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def production_env(**overrides: str | None) -> dict[str, str | None]:
    return {
        "SECRET_KEY": "a-production-secret-key",
        "API_KEY_PEPPERS": VALID_PEPPERS,
        "SECRET_ENCRYPTION_KEYS": "dGVzdC1vbmx5LWJvdC10b2tlbi1rZXktMzItYnl0ZXM=",
        "EMAIL_HOST": "smtp.example.com",
    } | overrides


def assert_refused(result: subprocess.CompletedProcess, *needles: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "ImproperlyConfigured" in result.stderr
    last_line = result.stderr.strip().splitlines()[-1]
    for needle in needles:
        assert needle in last_line, result.stderr


def test_it_starts_with_every_required_setting(tmp_path):
    result = start_django(tmp_path, **production_env())

    assert result.returncode == 0, result.stderr


def test_it_starts_in_debug_without_a_secret_key_or_peppers(tmp_path):
    result = start_django(tmp_path, DEBUG="true")

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("overrides", "needles"),
    [
        ({"SECRET_KEY": None}, ["SECRET_KEY"]),
        ({"SECRET_KEY": "   "}, ["SECRET_KEY"]),
        ({"DEBUG": "false", "API_KEY_PEPPERS": None}, ["API_KEY_PEPPERS"]),
        ({"API_KEY_PEPPERS": "k1=too-short"}, ["API_KEY_PEPPERS"]),
        ({"DATABASE_URL": "mysql://x"}, ["DATABASE_URL"]),
        ({"DATABASE_URL": "nonsense://"}, ["DATABASE_URL"]),
        ({"RATE_LIMIT_PER_MINUTE": "abc"}, ["RATE_LIMIT_PER_MINUTE", "'abc'"]),
        ({"RATE_LIMIT_PER_MINUTE": "0"}, ["RATE_LIMIT_PER_MINUTE"]),
        ({"DEBUG": "maybe"}, ["DEBUG"]),
        (
            {"DATABASE_URL": "postgres://h/db", "DATABASE_PREPARED_STATEMENTS": "maybe"},
            ["DATABASE_PREPARED_STATEMENTS"],
        ),
        ({"REDIS_URL": "http://127.0.0.1:6379/0"}, ["REDIS_URL"]),
        ({"LOG_LEVEL": "chatty"}, ["LOG_LEVEL"]),
        ({"SECRET_ENCRYPTION_KEYS": None}, ["SECRET_ENCRYPTION_KEYS"]),
        ({"SECRET_ENCRYPTION_KEYS": "not-a-fernet-key"}, ["SECRET_ENCRYPTION_KEYS"]),
        ({"EMAIL_HOST": None}, ["EMAIL_HOST", "EMAIL_CONSOLE_ALLOWED=true"]),
        ({"EMAIL_HOST": None, "EMAIL_CONSOLE_ALLOWED": "false"}, ["EMAIL_HOST"]),
        ({"EMAIL_CONSOLE_ALLOWED": "maybe"}, ["EMAIL_CONSOLE_ALLOWED", "'maybe'"]),
        ({"BILLING_SELLER_COUNTRY": "ZZ"}, ["BILLING_SELLER_COUNTRY", "'ZZ'"]),
        ({"BILLING_SELLER_COUNTRY": "EU"}, ["BILLING_SELLER_COUNTRY", "'EU'"]),
    ],
)
def test_it_refuses_to_start_on_a_bad_or_missing_value(tmp_path, overrides, needles):
    assert_refused(start_django(tmp_path, **production_env(**overrides)), *needles)


PRINT_MAILER = f"{SETUP}; from django.conf import settings as s; print(s.MAILERS['default'])"


@pytest.mark.parametrize(
    ("overrides", "backend"),
    [
        ({}, "smtp"),
        ({"EMAIL_CONSOLE_ALLOWED": "true"}, "smtp"),
        ({"EMAIL_HOST": None, "EMAIL_CONSOLE_ALLOWED": "true"}, "console"),
        ({"EMAIL_HOST": None, "DEBUG": "true"}, "console"),
    ],
)
def test_e_mail_goes_to_the_console_only_in_debug_or_when_allowed(tmp_path, overrides, backend):
    result = start_django(tmp_path, PRINT_MAILER, **production_env(**overrides))

    assert result.returncode == 0, result.stderr
    assert f"django.core.mail.backends.{backend}.EmailBackend" in result.stdout


PRINT_DATABASE_OPTIONS = f"{SETUP}; from django.conf import settings as s; print(s.DATABASES)"


@pytest.mark.parametrize(
    ("url", "flag", "prepared"),
    [
        ("postgres://postgres@127.0.0.1:5432/db", None, True),
        ("postgres://postgres@127.0.0.1:5432/db", "true", True),
        ("postgres://postgres@127.0.0.1:5432/db", "false", False),
        ("sqlite:///db.sqlite3", "true", False),
    ],
)
def test_postgresql_connections_prepare_their_statements_unless_turned_off(
    tmp_path, url, flag, prepared
):
    result = start_django(
        tmp_path,
        PRINT_DATABASE_OPTIONS,
        **production_env(DATABASE_URL=url, DATABASE_PREPARED_STATEMENTS=flag),
    )

    assert result.returncode == 0, result.stderr
    assert ("'server_side_binding': True" in result.stdout) is prepared
    assert ("'prepare_threshold': 5" in result.stdout) is prepared


def test_the_database_url_keeps_its_own_options_beside_the_prepared_statements(tmp_path):
    url = "postgres://postgres@127.0.0.1:5432/db?sslmode=require&application_name=hms"
    result = start_django(tmp_path, PRINT_DATABASE_OPTIONS, **production_env(DATABASE_URL=url))

    assert result.returncode == 0, result.stderr
    for option in ("'sslmode': 'require'", "'application_name': 'hms'", "'prepare_threshold': 5"):
        assert option in result.stdout
