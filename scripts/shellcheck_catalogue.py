"""Lint every shell script of the game catalogue (servers/catalogue/<slug>/*.sh) with shellcheck.

    .venv/bin/python scripts/shellcheck_catalogue.py

A script holds ``{{KEY}}`` placeholders, which the node agent replaces by the shell-quoted value
(one shell word): shellcheck reads each as ``"${KEY}"``, one word as well, on the same line, so
what it reports points at the file's own lines. Those variables are the agent's to set, hence
SC2154 (referenced but not assigned) and SC2153 (a possible misspelling of a lowercase variable
of the script) are off. The scripts run with ``/bin/sh`` (the start command with ``sh -c``):
POSIX sh. The few findings that are the script's intent are excused here, per file and rule with
the reason, rather than by a directive in the script: a comment would change the template the
nodes receive.

A game's script is checked as the node receives it, its ``# include: ../_shared/<name>.sh``
lines expanded by the loader (servers.catalogue.expand_includes): a piece is only sound where
it stands (a variable the script sets and only the included SteamCMD install reads would be
"unused" otherwise). Each finding is reported once, at the file and line it is in, so one in a
shared file is reported at ``_shared/<name>.sh``, not in every script that includes it; each
shared file is also checked alone. Exit status: 1 when anything is reported (or an include does
not resolve), 2 when shellcheck is missing or fails, else 0.
"""

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from servers.catalogue import CATALOGUE_DIR as CATALOGUE  # noqa: E402  (after ROOT is on the path)
from servers.catalogue import expand_includes  # noqa: E402

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
EXCLUDED_EVERYWHERE = ["SC2154", "SC2153"]
# (file, rule): why the finding is what the script means; a file of the catalogue folder.
EXCUSED = {
    ("7-days-to-die/start.sh", "SC2317"): "shutdown() runs from the trap on the stop signal",
    ("minecraft-java/install.sh", "SC2020"): "tr '{}' '\\n\\n' turns both braces into newlines",
    ("minecraft-bedrock/install.sh", "SC2020"): "tr '{}' '\\n\\n' turns both braces into newlines",
    ("space-engineers/start.sh", "SC1003"): "'\\\\' is tr's escaped backslash: / becomes \\",
}


def findings(script: Path, scratch: Path) -> list[str]:
    """shellcheck's findings in ``script`` (its includes expanded), each as a gcc-style line at
    the catalogue file and line it is in; the excused ones left out."""
    lines, problems = expand_includes(script, script.read_text())
    name = script.relative_to(CATALOGUE).as_posix()
    if problems:
        return [f"{script.relative_to(ROOT)}: {problem}" for problem in problems]
    copy = scratch / name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("".join(PLACEHOLDER.sub(r'"${\1}"', line.text) for line in lines))
    options = ["--shell=sh", f"--exclude={','.join(EXCLUDED_EVERYWHERE)}", "--format=json1"]
    result = subprocess.run(
        ["shellcheck", *options, name], cwd=scratch, capture_output=True, text=True, check=False
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(f"shellcheck failed on {name}: {result.stderr.strip()}")
    reported = []
    for comment in json.loads(result.stdout)["comments"]:
        source = lines[comment["line"] - 1]
        where = source.file.relative_to(CATALOGUE).as_posix()
        rule = f"SC{comment['code']}"
        if (where, rule) in EXCUSED:
            continue
        reported.append(
            f"{(CATALOGUE / where).relative_to(ROOT)}:{source.number}:{comment['column']}: "
            f"{comment['level']}: {comment['message']} [{rule}]"
        )
    return reported


def main() -> int:
    if shutil.which("shellcheck") is None:
        print("shellcheck is not installed (apt-get install shellcheck).", file=sys.stderr)
        return 2
    scripts = sorted(CATALOGUE.glob("*/*.sh"))
    if not scripts:
        print(f"No scripts under {CATALOGUE}.", file=sys.stderr)
        return 2
    reported: dict[str, None] = {}  # in order, each once
    with tempfile.TemporaryDirectory() as scratch:
        for script in scripts:
            try:
                reported |= dict.fromkeys(findings(script, Path(scratch)))
            except RuntimeError as error:
                print(error, file=sys.stderr)
                return 2
    for line in reported:
        print(line)
    if reported:
        return 1
    print(f"shellcheck: {len(scripts)} catalogue scripts, nothing reported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
