"""Lint every shell script of the game catalogue (servers/catalogue/<slug>/*.sh) with shellcheck.

    .venv/bin/python scripts/shellcheck_catalogue.py

A script holds ``{{KEY}}`` placeholders, which the node agent replaces by the shell-quoted value
(one shell word): shellcheck reads each as ``"${KEY}"``, one word as well, on the same line, so
what it reports points at the file's own lines. Those variables are the agent's to set, hence
SC2154 (referenced but not assigned) and SC2153 (a possible misspelling of a lowercase variable
of the script) are off. The scripts run with ``/bin/sh`` (the start command with ``sh -c``):
POSIX sh. The few findings that are the script's intent are excused here, per file and rule with
the reason, rather than by a directive in the script: a comment would change the template the
nodes receive. Exit status: shellcheck's (0 when nothing is reported).
"""

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "servers" / "catalogue"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
EXCLUDED_EVERYWHERE = ["SC2154", "SC2153"]
# (script, rule): why the finding is what the script means.
EXCUSED = {
    ("7-days-to-die/start.sh", "SC2317"): "shutdown() runs from the trap on the stop signal",
    ("minecraft-java/install.sh", "SC2020"): "tr '{}' '\\n\\n' turns both braces into newlines",
    ("minecraft-bedrock/install.sh", "SC2020"): "tr '{}' '\\n\\n' turns both braces into newlines",
    ("space-engineers/start.sh", "SC1003"): "'\\\\' is tr's escaped backslash: / becomes \\",
}


def main() -> int:
    if shutil.which("shellcheck") is None:
        print("shellcheck is not installed (apt-get install shellcheck).", file=sys.stderr)
        return 2
    scripts = sorted(CATALOGUE.glob("*/*.sh"))
    if not scripts:
        print(f"No scripts under {CATALOGUE}.", file=sys.stderr)
        return 2
    status = 0
    with tempfile.TemporaryDirectory() as scratch:
        for script in scripts:
            relative = script.relative_to(ROOT)
            copy = Path(scratch) / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(PLACEHOLDER.sub(r'"${\1}"', script.read_text()))
            name = f"{script.parent.name}/{script.name}"
            excluded = [*EXCLUDED_EVERYWHERE, *(rule for where, rule in EXCUSED if where == name)]
            options = ["--shell=sh", f"--exclude={','.join(excluded)}", "--format=gcc"]
            result = subprocess.run(
                ["shellcheck", *options, str(relative)],
                cwd=scratch,
                capture_output=True,
                text=True,
                check=False,
            )
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
            status = max(status, result.returncode)
    if status == 0:
        print(f"shellcheck: {len(scripts)} catalogue scripts, nothing reported")
    return status


if __name__ == "__main__":
    sys.exit(main())
