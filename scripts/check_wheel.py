"""Build the wheel, install it into a fresh virtualenv, and check the service from it alone.

    .venv/bin/python scripts/check_wheel.py

The editable install of the development environment hides a package or a template the wheel
leaves out; this runs from a folder outside the project, so every import, template and static
file comes from the installed wheel: ``django-admin check --deploy`` with production settings,
then a template of every app and the dashboard's static files.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "var" / "wheel"

SMOKE = """
import django
django.setup()
from django.apps import apps
from django.contrib.staticfiles import finders
from django.template.loader import get_template

for name in ["base.html", "404.html", "500.html", "dashboard/home.html",
             "accounts/api_keys/list.html", "servers/bot_list.html",
             "registration/login.html", "drf_spectacular/redoc.html",
             "billing/pdf/document.html", "analytics/overview.html"]:
    get_template(name)
for path in ["css/dashboard.css", "js/dashboard.js", "js/console.js",
             "vendor/xterm/xterm/xterm.js", "vendor/xterm/xterm/LICENSE",
             "vendor/chartjs/chart.umd.min.js", "js/usage_charts.js",
             "vendor/xterm/addon-fit/addon-fit.js", "js/overview_charts.js",
             "js/staff_reports.js"]:
    assert finders.find(path), f"static file {path} is not in the wheel"
for label in [
    "hosting", "accounts", "billing", "events", "servers", "webhooks", "idempotency",
    "stripe_gateway",
    "support", "analytics",
]:
    apps.get_app_config(label)
# The node agent ships in the same wheel: its package, its test workloads, its protocol.
import pathlib
import agent.__main__, agent.app, agent.launch
workloads = pathlib.Path(agent.__file__).parent / "workloads"
assert (workloads / "gameserver.py").is_file() and (workloads / "bot.py").is_file(), workloads
assert (pathlib.Path(agent.__file__).parent / "PROTOCOL.md").is_file()
print("templates, static files, apps and the agent all come from the wheel")
"""


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    # setuptools reuses build/ from an earlier build: a module removed from the package list
    # would still be in the wheel.
    shutil.rmtree(ROOT / "build", ignore_errors=True)
    OUT.mkdir(parents=True)
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(OUT), str(ROOT)],
        check=True,
    )
    (wheel,) = OUT.glob("*.whl")
    env_dir = OUT / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DEBUG", "DATABASE_URL", "REDIS_URL", "PYTHONPATH", "EMAIL_CONSOLE_ALLOWED"}
    }
    env.update(
        DJANGO_SETTINGS_MODULE="hosting.settings",
        SECRET_KEY="wheel-check-" + "x" * 50,
        ALLOWED_HOSTS="panel.example.com",
        EMAIL_HOST="smtp.example.com",
        DATABASE_URL="sqlite:///" + str(OUT / "db.sqlite3"),
        STATIC_ROOT=str(OUT / "static"),
    )
    with tempfile.TemporaryDirectory() as elsewhere:  # nothing of the project on sys.path
        subprocess.run(
            [str(bin_dir / "django-admin"), "check", "--deploy", "--fail-level", "WARNING"],
            cwd=elsewhere,
            env=env,
            check=True,
        )
        subprocess.run([str(bin_dir / "python"), "-c", SMOKE], cwd=elsewhere, env=env, check=True)
    print(f"== {wheel.name}: installs and checks clean")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as failed:
        sys.exit(failed.returncode or 1)
