"""Check the OpenAPI schema as the clients of the API use it; fail the build on a regression.

    .venv/bin/python scripts/check_openapi.py

1. ``manage.py spectacular --validate --fail-on-warn`` writes the schema (no warning allowed);
2. openapi-spec-validator validates it against the OpenAPI 3.1 specification;
3. openapi-python-client generates the typed Python client from it;
4. ``mypy --strict`` type-checks ``scripts/openapi/client_example.py``, a small program
   written against that client.

The generated client is written under ``var/openapi-client`` (git-ignored) and never committed.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "var" / "openapi-client"
PACKAGE = "hosting_management_service_api_client"
# The generator reads no PDF responses (invoice and credit-note PDFs): it is told to read them
# as the bytes they are.
CLIENT_CONFIG = {"content_type_overrides": {"application/pdf": "application/octet-stream"}}


def run(*command: str, **kwargs) -> None:
    shown = (Path(part).name if part.startswith(str(ROOT)) else part for part in command)
    print("==", " ".join(shown))
    subprocess.run(command, cwd=ROOT, check=True, **kwargs)


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    schema = OUT / "openapi.json"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    run(str(BIN / "python"), "manage.py", "spectacular", "--validate", "--fail-on-warn",
        "--format", "openapi-json", "--file", str(schema), env=env)  # fmt: skip
    run(str(BIN / "openapi-spec-validator"), str(schema), env=env)
    config = OUT / "client-config.json"
    config.write_text(json.dumps(CLIENT_CONFIG))
    run(str(BIN / "openapi-python-client"), "generate", "--path", str(schema),
        "--config", str(config), "--output-path", str(OUT / PACKAGE), "--meta", "none",
        "--overwrite", "--fail-on-warning", env=env)  # fmt: skip
    run(str(BIN / "mypy"), "--strict", "--no-incremental", "--cache-dir", os.devnull,
        str(ROOT / "scripts" / "openapi" / "client_example.py"),
        env={**env, "MYPYPATH": str(OUT)})  # fmt: skip
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as failed:
        sys.exit(failed.returncode or 1)
