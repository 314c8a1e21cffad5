"""Build the two wheels, install each into a fresh virtualenv, and check each from it alone.

    .venv/bin/python scripts/check_wheel.py

The editable install of the development environment hides a package or a template the wheel
leaves out; this runs from a folder outside the project, so every import, template and static
file comes from the installed wheel. The control plane: ``django-admin check --deploy`` with
production settings, then a template of every app and the dashboard's static files, and no
node agent in it. The node agent (agent/pyproject.toml, what a node installs): built from a
copy of agent/ alone, so the folder needs nothing else of the project; its modules, workloads,
protocol and spec schema are in the wheel, ``python -m agent --help`` and ``hms-agent --help``
run, and its virtualenv holds no Django.
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
    "support", "analytics", "databases",
]:
    apps.get_app_config(label)
# The node agent is a distribution of its own: not in this wheel, nor its dependencies.
import importlib.util
for name in ["agent", "aiohttp", "inotify_simple"]:
    assert importlib.util.find_spec(name) is None, f"{name} came with the control plane's wheel"
# The game catalogue is data beside the code: every game folder, with its scripts.
from servers.catalogue import load_catalogue
assert len(load_catalogue()) >= 25, "the game catalogue's folders are not in the wheel"
# The translations (locale/<language>/LC_MESSAGES/*.mo) and the date formats per language.
from django.utils import formats, translation
for language in ("de", "fr", "es"):
    with translation.override(language):
        assert translation.gettext("Profile") != "Profile", f"no {language} catalogue"
        assert formats.get_format("SHORT_DATE_FORMAT") != "Y-m-d", f"no {language} formats"
print("templates, static files and apps all come from the wheel, and no node agent")
"""

AGENT_SMOKE = """
import importlib, importlib.util, pathlib, pkgutil
import agent
package = pathlib.Path(agent.__file__).parent
for module in pkgutil.iter_modules([str(package)]):
    importlib.import_module(f"agent.{module.name}")
for name in ["workloads/gameserver.py", "workloads/bot.py", "PROTOCOL.md", "spec.schema.json"]:
    assert (package / name).is_file(), f"{name} is not in the agent's wheel"
# A node runs no control plane: nothing of it, nor Django, comes with the agent.
for name in ["django", "rest_framework", "hosting", "servers"]:
    assert importlib.util.find_spec(name) is None, f"{name} came with the agent's wheel"
print("the agent's modules, workloads, protocol and schema come from its wheel, without Django")
"""


def check_agent_wheel() -> None:
    """The node agent's wheel, built from a copy of agent/ alone, in a virtualenv of its own."""
    out = OUT / "agent"
    source = out / "source" / "agent"
    shutil.copytree(
        ROOT / "agent", source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    python = str(ROOT / ".venv" / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), source],
        check=True,
    )
    (wheel,) = out.glob("*.whl")
    env_dir = out / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(wheel)], check=True
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as elsewhere:  # nothing of the project on sys.path
        for command in ([str(bin_dir / "python"), "-m", "agent"], [str(bin_dir / "hms-agent")]):
            subprocess.run(
                [*command, "--help"], cwd=elsewhere, env=env, check=True, stdout=subprocess.DEVNULL
            )
        subprocess.run(
            [str(bin_dir / "python"), "-c", AGENT_SMOKE], cwd=elsewhere, env=env, check=True
        )
    print(f"== {wheel.name}: installs alone and runs")


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
    check_agent_wheel()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as failed:
        sys.exit(failed.returncode or 1)
