"""Check the OpenAPI schema as the clients of the API use it; fail the build on a regression.

    .venv/bin/python scripts/check_openapi.py

1. ``manage.py spectacular --validate --fail-on-warn`` writes the schema (no warning allowed);
2. openapi-spec-validator validates it against the OpenAPI 3.1 specification;
3. openapi-python-client generates the typed Python client from it, without any configuration
   (downloads, uploads and every response as the schema declares them);
4. ``mypy --strict`` type-checks ``scripts/openapi/client_example.py``, a small program
   written against that client, with no expression of type ``Any`` in it (an untyped response
   would let anything through);
5. openapi-typescript generates the TypeScript types (``scripts/openapi-ts/generate.mjs``) and
   ``tsc --strict`` type-checks ``scripts/openapi-ts/client_example.ts``, written against them
   with openapi-fetch. The three npm packages are pinned in ``scripts/openapi-ts/package.json``
   and its lockfile (TypeScript 5: openapi-typescript 7 crashes with TypeScript 7) and installed
   by ``npm ci`` into ``var/openapi-ts``, again only when the lockfile changed.

What is generated is written under ``var/`` (git-ignored) and never committed.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "var" / "openapi-client"
PACKAGE = "hosting_management_service_api_client"
TS_SOURCE = ROOT / "scripts" / "openapi-ts"
TS_OUT = ROOT / "var" / "openapi-ts"


def run(*command: str, cwd: Path = ROOT, **kwargs) -> None:
    shown = (Path(part).name if part.startswith(str(ROOT)) else part for part in command)
    print("==", " ".join(shown), flush=True)
    subprocess.run(command, cwd=cwd, check=True, **kwargs)


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    schema = OUT / "openapi.json"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    run(
        str(BIN / "python"),
        "manage.py",
        "spectacular",
        "--validate",
        "--fail-on-warn",
        "--format",
        "openapi-json",
        "--file",
        str(schema),
        env=env,
    )
    run(str(BIN / "openapi-spec-validator"), str(schema), env=env)
    run(
        str(BIN / "openapi-python-client"),
        "generate",
        "--path",
        str(schema),
        "--output-path",
        str(OUT / PACKAGE),
        "--meta",
        "none",
        "--overwrite",
        "--fail-on-warning",
        env=env,
    )
    run(
        str(BIN / "mypy"),
        "--config-file",
        str(ROOT / "scripts" / "openapi" / "mypy.ini"),
        "--no-incremental",
        "--cache-dir",
        os.devnull,
        str(ROOT / "scripts" / "openapi" / "client_example.py"),
        env={**env, "MYPYPATH": str(OUT)},
    )
    typescript_check(schema)
    return 0


def typescript_check(schema: Path) -> None:
    """openapi-typescript's types of ``schema`` and ``tsc`` over client_example.ts."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        if os.environ.get("CI") == "true":
            raise SystemExit("CI checks the TypeScript client: it needs node and npm.")
        print("== skipping the TypeScript client check (needs node and npm)")
        return
    TS_OUT.mkdir(parents=True, exist_ok=True)
    lock = (TS_SOURCE / "package-lock.json").read_bytes()
    stamp = TS_OUT / ".installed-lock"
    if not stamp.exists() or stamp.read_bytes() != lock or not (TS_OUT / "node_modules").is_dir():
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(TS_SOURCE / name, TS_OUT / name)
        run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", cwd=TS_OUT)
        stamp.write_bytes(lock)
    for name in ("generate.mjs", "client_example.ts", "tsconfig.json"):
        shutil.copyfile(TS_SOURCE / name, TS_OUT / name)
    run("node", str(TS_OUT / "generate.mjs"), str(schema), str(TS_OUT / "schema.d.ts"), cwd=TS_OUT)
    run(
        str(TS_OUT / "node_modules" / ".bin" / "tsc"),
        "--project",
        str(TS_OUT / "tsconfig.json"),
        cwd=TS_OUT,
    )


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as failed:
        sys.exit(failed.returncode or 1)
