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

# The node agent is a distribution of its own (agent/pyproject.toml), installed beside the
# control plane: this machine is a node too (LOCAL_AGENT=1 ./scripts/run), and the agent's
# tests and bench/agent.py run it.
install_project() {  # $1: the extras to install, e.g. "[dev]" or ""
  local stamp=".venv/.installed-$(cat pyproject.toml agent/pyproject.toml | sha256sum | cut -c1-16)$1"
  if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".$1" -e ./agent
    touch "$stamp"
  fi
}

# The settings of ./scripts/run and ./scripts/manage on this machine: production's (DEBUG off,
# so nobody meets Django's debug pages) with secrets generated once into var/local-secrets.env
# and what a laptop needs instead of HTTPS and SMTP: plain-HTTP cookies, no redirect to HTTPS,
# e-mails printed to the console. A variable already set in the environment wins.
use_local_settings() {
  local var_dir="${VAR_DIR:-var}"
  local secrets="$var_dir/local-secrets.env"
  # What the control plane writes (the database, var/ with its secrets and customers' uploads)
  # is this user's alone, whatever umask the shell had; var/ made by an earlier run is closed too.
  umask 077
  mkdir -p "$var_dir"
  chmod 700 "$var_dir"
  local database
  for database in db.sqlite3 db.sqlite3-wal db.sqlite3-shm; do
    if [ -e "$database" ]; then chmod 600 "$database"; fi
  done
  if [ ! -f "$secrets" ]; then
    # The second pepper and encryption key are the ones DEBUG used to embed, so a database made
    # by an earlier ./scripts/run keeps its API keys, bot tokens and webhook secrets working.
    (umask 077 && .venv/bin/python - >"$secrets.new" <<'PY'
import secrets

from cryptography.fernet import Fernet

print(f'export SECRET_KEY="${{SECRET_KEY:-{secrets.token_urlsafe(50)}}}"')
print(
    f'export API_KEY_PEPPERS="${{API_KEY_PEPPERS:-local={secrets.token_urlsafe(32)},'
    'dev=development-only-pepper-not-for-production-use}"'
)
print(
    f'export SECRET_ENCRYPTION_KEYS="${{SECRET_ENCRYPTION_KEYS:-{Fernet.generate_key().decode()},'
    'ZGV2ZWxvcG1lbnQtb25seS1ib3QtdG9rZW4ta2V5ISE=}"'
)
PY
    ) && mv "$secrets.new" "$secrets"
  fi
  # shellcheck source=/dev/null
  source "$secrets"
  export DEBUG="${DEBUG:-false}"
  export EMAIL_CONSOLE_ALLOWED="${EMAIL_CONSOLE_ALLOWED:-true}"
  export SECURE_SSL_REDIRECT="${SECURE_SSL_REDIRECT:-false}"
  export SECURE_HSTS_SECONDS="${SECURE_HSTS_SECONDS:-0}"
  export SESSION_COOKIE_SECURE="${SESSION_COOKIE_SECURE:-false}"
  export CSRF_COOKIE_SECURE="${CSRF_COOKIE_SECURE:-false}"
  # The demo seller's bank account, so an open invoice shows how to pay it by transfer (staff
  # then mark it paid; README, "Paying in the demo"). Example details, and the holder's name
  # says so wherever they are printed; a real IBAN set in the environment replaces all three.
  if [ -z "${BILLING_SELLER_IBAN:-}" ]; then
    export BILLING_SELLER_IBAN="BE71 0961 2345 6769" BILLING_SELLER_BIC="GKCCBEBB"
    export BILLING_SELLER_ACCOUNT_HOLDER="${BILLING_SELLER_NAME:-Demo Hosting Co.} (example bank details: not a real account)"
  fi
  export HOST="${HOST:-127.0.0.1}" PORT="${PORT:-8000}"
  if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
    echo "PORT must be a port number (1-65535), got '$PORT'." >&2
    exit 1
  fi
  url_host="$HOST"
  [[ "$HOST" == *:* ]] && url_host="[$HOST]"
  export ALLOWED_HOSTS="${ALLOWED_HOSTS:-localhost,127.0.0.1,[::1],$url_host}"
  local_url="http://$url_host:$PORT"
  export SITE_URL="${SITE_URL:-$local_url}"
}
