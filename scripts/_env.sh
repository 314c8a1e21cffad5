# Shared by scripts/run and scripts/test: make .venv with a Python >= 3.12 and install the
# project into it, again only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

python_bin=""
for candidate in python3.13 python3 python3.12 python; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    python_bin=$candidate
    break
  fi
done
if [ -z "$python_bin" ]; then
  echo "Python 3.12 or newer is needed (python3 --version)." >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  "$python_bin" -m venv .venv
fi

install_project() {  # $1: the extras to install, e.g. "[dev]" or ""
  local stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)$1"
  if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".$1"
    touch "$stamp"
  fi
}
