"""Settings of the Hosting Management Service, read from the environment.

Every variable is documented in the README. A bad value stops start-up with a message naming
the variable (see hosting/env.py). Without DATABASE_URL the service runs on an embedded SQLite
file; PostgreSQL is the production database.
"""

from pathlib import Path

import dj_database_url
import pycountry
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from hosting.env import (
    env_bool,
    env_int,
    env_list,
    env_prefixed,
    env_str,
    parse_bic,
    parse_iban,
    parse_peppers,
)
from hosting.sso_env import sso_configured, sso_providers

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # Django admin, on a site whose sign-in has the dashboard's limits (accounts/admin_site.py).
    "accounts.apps.HostingAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # allauth's sessions page ("2 hours ago")
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks_db",
    "anymail",
    # Sign-in's second factors (TOTP, recovery codes), through django-allauth (README,
    # "Signing in"): its account flow runs our sign-in's stages.
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.usersessions",
    # Single sign-on (README, "Single sign-on"): the host's OpenID Connect provider, hardened
    # by accounts.sso, and the Discord, GitHub and Google presets.
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.discord",
    "allauth.socialaccount.providers.github",
    "allauth.socialaccount.providers.google",
    "hosting",  # the project's own commands (housekeeping)
    "accounts",
    "events",
    "servers",
    "databases",
    "webhooks",
    "idempotency",
    "billing",
    "stripe_gateway",
    "support",
    "analytics",
]

MIDDLEWARE = [
    "hosting.api.request_ids.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "hosting.middleware.UnstorableTextMiddleware",
    "hosting.middleware.MethodNotAllowedPageMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The person's language (Profile), else the browser's; the API always in English.
    "hosting.i18n.LanguageMiddleware",
    "accounts.middleware.CurrentAccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # A signed-in person's sessions (device, address, last seen): Profile → Security → Sessions.
    "accounts.middleware.SessionActivityMiddleware",
    # Second-factor policies: staff on admin, the desk and staff pages; accounts that ask it.
    "accounts.second_factor.SecondFactorPolicyMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "hosting.api.middleware.ApiErrorMiddleware",
    "idempotency.middleware.IdempotencyMiddleware",
]
# The API's own, lean stack (hosting/api/stack.py): requests under /v1 pass only these. Every
# header an API answer carries comes from one of them (request id, security headers, X-Frame-
# Options) or from the view; sessions, the user, messages, CSRF and the dashboard's policies have
# nothing to do on a Bearer request.
API_MIDDLEWARE = [
    "hosting.api.request_ids.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "hosting.i18n.LanguageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "hosting.api.middleware.ApiErrorMiddleware",
    "idempotency.middleware.IdempotencyMiddleware",
]

ROOT_URLCONF = "hosting.urls"
WSGI_APPLICATION = "hosting.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.dashboard",
                "support.context_processors.desk",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
try:
    _database = dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 600, minimum=0),
        # Off by default (Django's default): the check is a SELECT 1 round trip per request.
        # A connection the server dropped fails that one request; Django then replaces it.
        conn_health_checks=env_bool("DATABASE_CONN_HEALTH_CHECKS", False),
    )
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
if _database["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes; IMMEDIATE transactions take the
    # write lock up front, so two writers wait for each other instead of failing with "locked".
    _database["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        **_database.get("OPTIONS", {}),  # the URL's own query parameters win
    }
elif _database["ENGINE"] == "django.db.backends.postgresql":
    if env_bool("DATABASE_PREPARED_STATEMENTS", True):
        # Server-side parameters, and psycopg prepares a statement on a connection once it has
        # run 5 times there: PostgreSQL stops parsing and planning the hot path's two queries on
        # every request (bench/README.md, seventh run). Django leaves both off for the sake of
        # transaction-pooling PgBouncer before 1.21: set this to false behind one of those.
        _database["OPTIONS"] = {
            "server_side_binding": True,
            "prepare_threshold": 5,
            **_database.get("OPTIONS", {}),  # the URL's own (sslmode=require, ...) win
        }
else:
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL or SQLite.")
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache and shared counters --------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL") or None
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured("REDIS_URL must start with redis://, rediss:// or unix://.")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "hms",
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Users and sessions ---------------------------------------------------------------------
AUTH_USER_MODEL = "accounts.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The dashboard, e-mails and PDFs in English, German, French or Spanish; the API in English
# (hosting/i18n.py). Translations live in locale/<language>/LC_MESSAGES/django.po (README,
# "The customer's language"); dates are written by hosting/formats/<language>/formats.py.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "Deutsch"), ("fr", "Français"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["hosting.formats"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env_str("STATIC_ROOT") or str(BASE_DIR / "staticfiles")
# WhiteNoise serves static files (the API docs' assets included) from the web processes, so the
# docs work without a CDN or a separate file server; run `collectstatic` when deploying.
# Uploaded files (ticket attachments): never served at a public URL, only through views that
# check who asks. Local files under MEDIA_ROOT by default; any django-storages backend (S3,
# ...) by setting STORAGES["default"] in a settings module of your own.
MEDIA_ROOT = env_str("MEDIA_ROOT") or str(BASE_DIR / "var" / "media")
# Uploads are customers' (ticket attachments, bot code): readable by the control plane's own user
# only, whoever else shares the machine. The storage makes missing folders, MEDIA_ROOT included,
# 0700; a MEDIA_ROOT that exists already keeps its mode (chmod 700 it).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Dashboard sign-in and e-mail ----------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
# django-allauth: people sign in with their e-mail address and password on our own forms
# (accounts/views/auth.py hands a checked password to allauth's login flow, which adds the
# second factor's stage); allauth's pages are its factor pages under /auth/.
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "accounts.allauth_adapter.AccountAdapter"
ACCOUNT_LOGOUT_REDIRECT_URL = "login"
# How recent a sign-in (or a factor typed again) must be for a sensitive action: setting up or
# removing a factor, and the others README lists.
ACCOUNT_REAUTHENTICATION_TIMEOUT = env_int("REAUTHENTICATION_MINUTES", 10, minimum=1) * 60
# Staff reach admin, the desk and the staff pages only in a session that passed a second
# factor (accounts/second_factor.py). Off only for a host that enforces factors elsewhere.
STAFF_REQUIRE_SECOND_FACTOR = env_bool("STAFF_REQUIRE_SECOND_FACTOR", True)
USERSESSIONS_TRACK_ACTIVITY = True
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes", "webauthn"]
# Passkeys (WebAuthn): as a second factor after the password, and to sign in without one
# ("Sign in with a passkey" on /login and admin's sign-in). The browser's origin must be https
# (or http://localhost, which browsers and fido2 accept as secure): allauth's
# MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN stays off, so an assertion made for another origin is
# refused. README, "Passkeys".
MFA_PASSKEY_LOGIN_ENABLED = True
# Passkey sign-ins count in the sign-in's own limits (accounts/passkeys.py), not allauth's own
# second limiter for them, so one budget holds everywhere (LOGIN_ATTEMPTS_PER_MINUTE).
MFA_RATE_LIMITS = {"webauthn_login": ""}
# The codes typed, and the passkeys used, count in the sign-in's own limits
# (accounts/sign_in.py, accounts/passkeys.py).
MFA_FORMS = {
    "authenticate": "accounts.forms.FactorAuthenticateForm",
    "reauthenticate": "accounts.forms.FactorReauthenticateForm",
    "authenticate_webauthn": "accounts.passkeys.PasskeyFactorForm",
    "reauthenticate_webauthn": "accounts.passkeys.PasskeyReauthenticateForm",
    "login_webauthn": "accounts.passkeys.PasskeyLoginForm",
}
MFA_TOTP_ISSUER = env_str("MFA_TOTP_ISSUER") or "Hosting Management"
MFA_RECOVERY_CODE_COUNT = 10
# A code of the 30-second period before or after the current one is taken too (RFC 6238's one
# step of drift): a code typed as it ticks over, or a phone's clock a few seconds off, still
# works. allauth keeps a used code refused for the whole window, so a replay stays refused.
MFA_TOTP_TOLERANCE = 1
# Shown once, as the issue asks: regenerating gives a new set.
MFA_RECOVERY_CODES_SHOW_ONCE = True
# Single sign-on: the providers the host configured (hosting/sso_env.py), PKCE on for each;
# who may sign in with them is accounts/sso_adapter.py's rule (README, "Single sign-on").
SOCIALACCOUNT_PROVIDERS = sso_providers()
SOCIALACCOUNT_ADAPTER = "accounts.sso_adapter.SocialAccountAdapter"
SOCIALACCOUNT_QUERY_EMAIL = True
SOCIALACCOUNT_STORE_TOKENS = False
# Linking or unlinking an identity (a way into the account) asks for a recent sign-in.
SOCIALACCOUNT_REAUTHENTICATION_REQUIRED = True
# Staff sign in with single sign-on only: their password is refused on /login and /admin/.
STAFF_SSO_ONLY = env_bool("STAFF_SSO_ONLY", False)
if STAFF_SSO_ONLY and not sso_configured(SOCIALACCOUNT_PROVIDERS):
    raise ImproperlyConfigured(
        "STAFF_SSO_ONLY needs a single sign-on provider (SSO_OIDC_… or a preset's variables)."
    )
# The public address of the dashboard, for links in e-mails (invitations, password resets).
SITE_URL = (env_str("SITE_URL") or "http://127.0.0.1:8000").rstrip("/")
if not SITE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured("SITE_URL must start with http:// or https://.")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL") or "Hosting Management <noreply@localhost>"
# Django 6.1's MAILERS: SMTP once EMAIL_HOST is set, else the console. E-mails carry invitation
# and password-reset links, which take over accounts: out of DEBUG they go to the log only when
# the operator says so.
_email_host = env_str("EMAIL_HOST") or ""
_email_console_allowed = env_bool("EMAIL_CONSOLE_ALLOWED", False)
if not _email_host and not DEBUG and not _email_console_allowed:
    raise ImproperlyConfigured(
        "EMAIL_HOST must be set when DEBUG is off: without it e-mails (invitation and "
        "password-reset links) are written to the log. Set EMAIL_CONSOLE_ALLOWED=true to "
        "accept that."
    )
if _email_host:
    MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {
                "host": _email_host,
                "port": env_int("EMAIL_PORT", 587, minimum=1),
                "username": env_str("EMAIL_HOST_USER") or "",
                "password": env_str("EMAIL_HOST_PASSWORD") or "",
                "use_tls": env_bool("EMAIL_USE_TLS", True),
                "timeout": 10,
            },
        }
    }
else:
    MAILERS = {"default": {"BACKEND": "django.core.mail.backends.console.EmailBackend"}}
# Sign-in attempts per minute, per client address and per e-mail address.
LOGIN_ATTEMPTS_PER_MINUTE = env_int("LOGIN_ATTEMPTS_PER_MINUTE", 10, minimum=1)
# SFTP sign-ins the agents ask about (POST /v1/agent/sftp/auth): every question counts, a
# key's sign-in asks twice and an open session once a minute; over either limit the answer is no.
SFTP_AUTH_ATTEMPTS_PER_MINUTE = env_int("SFTP_AUTH_ATTEMPTS_PER_MINUTE", 30, minimum=1)
SFTP_AUTH_NODE_ATTEMPTS_PER_MINUTE = env_int("SFTP_AUTH_NODE_ATTEMPTS_PER_MINUTE", 3000, minimum=1)

# --- Security (production defaults whenever DEBUG is off) -----------------------------------
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_X_FORWARDED_PROTO", False) else None
)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
X_FRAME_OPTIONS = "DENY"
# Covering indexes (INCLUDE) serve PostgreSQL's deep pages; SQLite, the embedded default, builds
# them without the extra columns, which is all it needs.
SILENCED_SYSTEM_CHECKS = ["models.W040"]
if not SECURE_HSTS_PRELOAD:
    # Preloading is hard to undo for a domain, so it stays the operator's explicit choice.
    SILENCED_SYSTEM_CHECKS.append("security.W021")

# --- API keys -------------------------------------------------------------------------------
_peppers = env_str("API_KEY_PEPPERS")
if not _peppers:
    if not DEBUG:
        raise ImproperlyConfigured("API_KEY_PEPPERS must be set when DEBUG is off.")
    _peppers = "dev=development-only-pepper-not-for-production-use"
API_KEY_PEPPERS = parse_peppers("API_KEY_PEPPERS", _peppers)

# --- What a new account may run without a plan ---------------------------------------------
# Servers and bots come with a plan (billing); staff give an account an unbilled allowance for
# what runs without one. New accounts (sign-ups and staff-made) start with this one: none by
# default, so every sign-up orders; a host that bills elsewhere sets its free tier or its quotas.
NEW_ACCOUNT_UNBILLED_ALLOWANCE = {
    "unbilled_instances": env_int("NEW_ACCOUNT_UNBILLED_INSTANCES", 0, minimum=0),
    "unbilled_memory_mb": env_int("NEW_ACCOUNT_UNBILLED_MEMORY_MB", 0, minimum=0),
    "unbilled_cpu_percent": env_int("NEW_ACCOUNT_UNBILLED_CPU_PERCENT", 0, minimum=0),
    "unbilled_disk_mb": env_int("NEW_ACCOUNT_UNBILLED_DISK_MB", 0, minimum=0),
}

# --- Rate limits (CONTRACT §6) --------------------------------------------------------------
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 600, minimum=1)
RATE_LIMIT_ANON_PER_MINUTE = env_int("RATE_LIMIT_ANON_PER_MINUTE", 60, minimum=1)
# Without Redis the counters live in a SQLite file shared by every process of this host.
RATE_LIMIT_SQLITE_PATH = env_str("RATE_LIMIT_SQLITE_PATH") or str(VAR_DIR / "ratelimit.sqlite3")
# Client addresses come from REMOTE_ADDR unless the service sits behind this many proxies that
# append to X-Forwarded-For (set it to the number of trusted proxies in front of the service).
NUM_PROXIES = env_int("NUM_PROXIES", 0, minimum=0)

# --- Servers, bots and the worker ----------------------------------------------------------
PROVISIONING_DRIVER = env_str("PROVISIONING_DRIVER") or "servers.drivers.simulated.SimulatedDriver"
SIMULATED_DRIVER_DELAY_SECONDS = float(env_int("SIMULATED_DRIVER_DELAY_SECONDS", 2, minimum=0))
# An action whose worker has not reported for this long is taken as abandoned (worker killed).
STALE_ACTION_SECONDS = env_int("STALE_ACTION_SECONDS", 300, minimum=10)
TASKS = {"default": {"BACKEND": "django_tasks_db.backend.DatabaseBackend"}}
# Node agents (agent/, servers.drivers.agent). The control plane signs its calls to agents and
# the console tokens it hands browsers with this Ed25519 key: 32 bytes, url-safe base64. Unset,
# it is derived from SECRET_KEY (so rotating SECRET_KEY then means agents learn the new public
# key on their next hello).
AGENT_SIGNING_KEY = env_str("AGENT_SIGNING_KEY") or ""
# Seconds the control plane waits for an agent: plain calls; an install (below
# STALE_ACTION_SECONDS, which must outlast any single driver call).
AGENT_REQUEST_TIMEOUT_SECONDS = env_int("AGENT_REQUEST_TIMEOUT_SECONDS", 10, minimum=1)
AGENT_INSTALL_TIMEOUT_SECONDS = env_int("AGENT_INSTALL_TIMEOUT_SECONDS", 240, minimum=5)
# How long a console token for the dashboard stays valid (the page renews it).
CONSOLE_TOKEN_SECONDS = env_int("CONSOLE_TOKEN_SECONDS", 600, minimum=30)
# How long a signed upload or download address of a server's file stays valid (agents refuse
# longer than 15 minutes); a transfer under way when it ends goes on, a restart asks anew.
FILE_URL_SECONDS = env_int("FILE_URL_SECONDS", 900, minimum=30, maximum=900)
# Backups of servers and bots on no plan (a plan's product carries its own): how many each
# may keep and how many MB they may take in all.
BACKUP_DEFAULT_LIMIT = env_int("BACKUP_DEFAULT_LIMIT", 3, minimum=0)
BACKUP_DEFAULT_STORAGE_MB = env_int("BACKUP_DEFAULT_STORAGE_MB", 10240, minimum=0)
# A backup or restore the agent has not reported on after this many hours has failed (its agent
# is gone for good: a restarted agent reports its lost work itself); the housekeeping loop marks it.
BACKUP_STALE_HOURS = env_int("BACKUP_STALE_HOURS", 12, minimum=1)
# Schedules of servers and bots on no plan (a plan's product carries its own): how many each may
# have. A tick missed while no dispatcher ran runs once, late, if less than this many minutes
# late (and less than the schedule's own period); otherwise it is recorded as skipped.
SCHEDULE_DEFAULT_LIMIT = env_int("SCHEDULE_DEFAULT_LIMIT", 5, minimum=0)
SCHEDULE_CATCH_UP_MINUTES = env_int("SCHEDULE_CATCH_UP_MINUTES", 15, minimum=0, maximum=1440)
# A schedule's step still running this many seconds after it began (its worker died), or not
# started this many seconds after its time (its queued task or the workers were lost), is failed
# by the dispatcher's and housekeeping's recovery pass, and its run goes on as after any failure.
# It must outlast a step's own work (an agent call or two, AGENT_REQUEST_TIMEOUT_SECONDS each).
SCHEDULE_STEP_TIMEOUT_SECONDS = env_int(
    "SCHEDULE_STEP_TIMEOUT_SECONDS", 600, minimum=60, maximum=86400
)
# Databases of servers and bots on no plan (a plan's product carries its own): how many each may
# have. A deleted server's or bot's databases are dropped this many hours after its deletion (by
# the housekeeping loop), so that a deletion by mistake can still be saved by support.
DATABASE_DEFAULT_LIMIT = env_int("DATABASE_DEFAULT_LIMIT", 1, minimum=0)
DATABASE_DROP_GRACE_HOURS = env_int("DATABASE_DROP_GRACE_HOURS", 72, minimum=0)
# Seconds the service waits for a database host to answer before giving up (503).
DATABASE_HOST_TIMEOUT_SECONDS = env_int("DATABASE_HOST_TIMEOUT_SECONDS", 5, minimum=1)
# How long the address of a backup's download stays valid (S3's presigned URLs alike).
BACKUP_URL_SECONDS = env_int("BACKUP_URL_SECONDS", 900, minimum=30, maximum=900)
# Where the file manager's "fetch from a URL" may fetch from: host names (a name covers its
# subdomains) or "*", and whether private, loopback and reserved addresses are allowed (never
# in production; the nodes have AGENT_PULL_ALLOWED_HOSTS and AGENT_PULL_ALLOW_PRIVATE too).
FILES_PULL_ALLOWED_HOSTS = env_list("FILES_PULL_ALLOWED_HOSTS", ["*"])
FILES_PULL_ALLOW_PRIVATE = env_bool("FILES_PULL_ALLOW_PRIVATE", False)
# How long a compress, decompress or fetch may keep the request waiting for the node (below
# gunicorn's GUNICORN_TIMEOUT); the node finishes the work even when the wait runs out.
FILES_LONG_CALL_SECONDS = env_int("FILES_LONG_CALL_SECONDS", 25, minimum=5)
# Where bots' code may come from: allowed URL schemes and hosts of a git repository or archive
# ("*" for any host). file:// is for tests and local development only.
BOT_SOURCE_SCHEMES = env_list("BOT_SOURCE_SCHEMES", ["https"])
BOT_ARCHIVE_MAX_BYTES = env_int("BOT_ARCHIVE_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
# The packages an imported egg's install script may ask for (servers.eggs): what the nodes
# carry. Empty: servers.eggs.NODE_PACKAGES, the tools of a Debian node as README lists them.
EGG_NODE_PACKAGES = env_list("EGG_NODE_PACKAGES", [])
BOT_SOURCE_HOSTS = env_list(
    "BOT_SOURCE_HOSTS", ["github.com", "gitlab.com", "codeberg.org", "bitbucket.org"]
)
# Secrets the service must use again (Discord bot tokens, webhook signing secrets) are
# encrypted at rest with these Fernet keys: the first encrypts, all decrypt.
_encryption_keys = env_list("SECRET_ENCRYPTION_KEYS", [])
if not _encryption_keys:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_ENCRYPTION_KEYS must be set when DEBUG is off.")
    _encryption_keys = ["ZGV2ZWxvcG1lbnQtb25seS1ib3QtdG9rZW4ta2V5ISE="]
for _key in _encryption_keys:
    try:
        Fernet(_key)
    except ValueError:
        raise ImproperlyConfigured(
            "SECRET_ENCRYPTION_KEYS must be comma-separated Fernet keys (32 url-safe base64 bytes)."
        ) from None
SECRET_ENCRYPTION_KEYS = _encryption_keys

# --- Webhooks ------------------------------------------------------------------------------
# Plain http:// targets and private/loopback addresses are for development and tests only.
WEBHOOKS_ALLOW_HTTP = env_bool("WEBHOOKS_ALLOW_HTTP", False)
WEBHOOKS_ALLOW_PRIVATE_TARGETS = env_bool("WEBHOOKS_ALLOW_PRIVATE_TARGETS", False)
WEBHOOKS_MAX_ENDPOINTS = env_int("WEBHOOKS_MAX_ENDPOINTS", 20, minimum=1)
EVENT_RETENTION_DAYS = env_int("EVENT_RETENTION_DAYS", 30, minimum=1)

# --- Analytics: how long usage history is kept (analytics/partitions.py) ---------------------
# Raw samples, minute rows and hour rows expire a whole partition at a time; day rows stay.
USAGE_RAW_RETENTION_DAYS = env_int("USAGE_RAW_RETENTION_DAYS", 3, minimum=1)
USAGE_MINUTE_RETENTION_DAYS = env_int("USAGE_MINUTE_RETENTION_DAYS", 30, minimum=1)
USAGE_HOUR_RETENTION_DAYS = env_int("USAGE_HOUR_RETENTION_DAYS", 397, minimum=31)

# --- Billing: the seller printed on invoices and credit notes --------------------------------
# Snapshotted onto each document when it is finalized, so changing these never alters an issued
# invoice. BILLING_SELLER_ADDRESS separates lines with "|" (or newlines); an empty
# BILLING_SELLER_VAT_ID prints none. The defaults are a demo seller.
_seller_country = (env_str("BILLING_SELLER_COUNTRY") or "BE").upper()
if not (
    len(_seller_country) == 2
    and _seller_country.isascii()
    and pycountry.countries.get(alpha_2=_seller_country) is not None
):
    raise ImproperlyConfigured(
        f"BILLING_SELLER_COUNTRY must be an ISO 3166-1 two-letter code, got {_seller_country!r}."
    )
_seller_address = env_str("BILLING_SELLER_ADDRESS") or "1 Example Street|1000 Brussels"
BILLING_SELLER = {
    "name": env_str("BILLING_SELLER_NAME") or "Demo Hosting Co.",
    "address_lines": [
        line.strip() for line in _seller_address.replace("\n", "|").split("|") if line.strip()
    ],
    "country": _seller_country,
    "vat_id": env_str("BILLING_SELLER_VAT_ID", "BE0123456749"),
    "email": env_str("BILLING_SELLER_EMAIL") or "billing@example.com",
}
# The seller's bank account, for customers who pay by bank transfer: the invoice page and the
# PDF of an open invoice show it with the invoice number as the reference, and staff mark the
# invoice paid when the money arrives. It is part of the seller, so finalizing snapshots it
# with the rest. Unset (no IBAN), invoices carry no transfer instructions: unlike the demo
# seller above there is no default, since an example IBAN on a real invoice would send real
# money astray (./scripts/run sets example details, marked as such, in scripts/_env.sh). The
# holder is the seller's name unless set; the BIC is optional (SEPA transfers need none).
_seller_iban = env_str("BILLING_SELLER_IBAN")
_seller_bic = env_str("BILLING_SELLER_BIC")
if _seller_iban:
    BILLING_SELLER["bank_account"] = {
        "account_holder": env_str("BILLING_SELLER_ACCOUNT_HOLDER") or BILLING_SELLER["name"],
        "iban": parse_iban("BILLING_SELLER_IBAN", _seller_iban),
        "bic": parse_bic("BILLING_SELLER_BIC", _seller_bic) if _seller_bic else "",
    }
elif _seller_bic or env_str("BILLING_SELLER_ACCOUNT_HOLDER"):
    raise ImproperlyConfigured(
        "BILLING_SELLER_BIC and BILLING_SELLER_ACCOUNT_HOLDER describe the account of "
        "BILLING_SELLER_IBAN, which is not set."
    )
# Invoices are numbered <prefix>-<year>-<000001> (credit notes likewise), gapless per year.
BILLING_INVOICE_PREFIX = env_str("BILLING_INVOICE_PREFIX") or "INV"
BILLING_CREDIT_NOTE_PREFIX = env_str("BILLING_CREDIT_NOTE_PREFIX") or "CN"
BILLING_DAYS_UNTIL_DUE = env_int("BILLING_DAYS_UNTIL_DUE", 7, minimum=0)
# The billing job (housekeeping, or `manage.py billing_run --every`): a renewal invoice is
# issued this many days before the period ends (at most half a period ahead, so an hourly plan
# renews half an hour ahead), due when the period ends. An unpaid invoice is retried (credit,
# saved payment methods) with a reminder e-mail on each of these days after its due date; after
# SUSPEND days overdue the server or bot is suspended (reason billing), after TERMINATE days it
# is deleted, with a warning WARNING days before. A product may set its own suspend/terminate
# days. A trial's end is announced TRIAL_NOTICE days ahead (at most half the trial).
BILLING_RENEWAL_DAYS_BEFORE = env_int("BILLING_RENEWAL_DAYS_BEFORE", 3, minimum=0)
_retry_days = env_list("BILLING_DUNNING_RETRY_DAYS", ["1", "3", "5", "7"])
if not all(day.isdigit() and int(day) >= 1 for day in _retry_days):
    raise ImproperlyConfigured(
        "BILLING_DUNNING_RETRY_DAYS are whole days after the due date, >= 1."
    )
BILLING_DUNNING_RETRY_DAYS = sorted({int(day) for day in _retry_days})
BILLING_SUSPEND_AFTER_DAYS = env_int("BILLING_SUSPEND_AFTER_DAYS", 7, minimum=0)
BILLING_TERMINATE_AFTER_DAYS = env_int("BILLING_TERMINATE_AFTER_DAYS", 30, minimum=1)
BILLING_TERMINATION_WARNING_DAYS = env_int("BILLING_TERMINATION_WARNING_DAYS", 3, minimum=0)
BILLING_TRIAL_NOTICE_DAYS = env_int("BILLING_TRIAL_NOTICE_DAYS", 3, minimum=0)
if BILLING_TERMINATE_AFTER_DAYS <= BILLING_SUSPEND_AFTER_DAYS:
    raise ImproperlyConfigured(
        "BILLING_TERMINATE_AFTER_DAYS must be after BILLING_SUSPEND_AFTER_DAYS."
    )
# The billing job renews the plain cases (an active subscription's next invoice, paid from
# credit or left open; the period's start) this many at a time, in one transaction each
# (billing/services/job/renewal_batch.py); 0 takes every subscription one at a time.
BILLING_BATCH_SIZE = env_int("BILLING_BATCH_SIZE", 200, minimum=0)
# Cards through Stripe (stripe_gateway/): all three keys, or none (then the service runs on the
# offline means alone and offers no cards). STRIPE_API_BASE points the library at another
# address (a local Stripe fake such as localstripe); STRIPE_TIMEOUT_SECONDS bounds each call.
STRIPE_SECRET_KEY = env_str("STRIPE_SECRET_KEY")
STRIPE_PUBLISHABLE_KEY = env_str("STRIPE_PUBLISHABLE_KEY")
STRIPE_WEBHOOK_SECRET = env_str("STRIPE_WEBHOOK_SECRET")
STRIPE_API_BASE = (env_str("STRIPE_API_BASE") or "").rstrip("/")
STRIPE_TIMEOUT_SECONDS = env_int("STRIPE_TIMEOUT_SECONDS", 20, minimum=1)
_stripe_keys = [STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY, STRIPE_WEBHOOK_SECRET]
if any(_stripe_keys) and not all(_stripe_keys):
    raise ImproperlyConfigured(
        "Set all of STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY and STRIPE_WEBHOOK_SECRET, or none."
    )
STRIPE_ENABLED = all(_stripe_keys)
# How unpaid invoices are collected, in order; the first that can take the payment does. With
# Stripe configured, the saved card comes after the account's credit.
BILLING_GATEWAYS = env_list(
    "BILLING_GATEWAYS",
    ["credit", "stripe", "bank_transfer"] if STRIPE_ENABLED else ["credit", "bank_transfer"],
)

# Support tickets (support/): resolved tickets close after this many days without a reply;
# new tickets go to the department's staff in turn when auto-assignment is on; attachments.
SUPPORT_AUTOCLOSE_DAYS = env_int("SUPPORT_AUTOCLOSE_DAYS", 7, minimum=1)
SUPPORT_AUTO_ASSIGN = env_bool("SUPPORT_AUTO_ASSIGN", False)
SUPPORT_ATTACHMENT_MAX_BYTES = env_int(
    "SUPPORT_ATTACHMENT_MAX_BYTES", 10 * 1024 * 1024, minimum=1024
)
SUPPORT_ATTACHMENTS_PER_MESSAGE = env_int("SUPPORT_ATTACHMENTS_PER_MESSAGE", 10, minimum=1)
# The address replies come back to: the desk's mail carries Reply-To <local>+<token>@<domain>.
SUPPORT_REPLY_ADDRESS = env_str("SUPPORT_REPLY_ADDRESS") or "support@localhost"
if "@" not in SUPPORT_REPLY_ADDRESS or "+" in SUPPORT_REPLY_ADDRESS.partition("@")[0]:
    raise ImproperlyConfigured("SUPPORT_REPLY_ADDRESS must be an address without a '+' tag.")
# More mail than this from one sender within an hour is dropped (a loop, or a flood).
SUPPORT_MAIL_PER_SENDER_PER_HOUR = env_int("SUPPORT_MAIL_PER_SENDER_PER_HOUR", 20, minimum=1)
# A larger message is dropped before it is parsed (mail servers cap around 25-50 MB).
SUPPORT_MAIL_MAX_BYTES = env_int("SUPPORT_MAIL_MAX_BYTES", 30 * 1024 * 1024, minimum=1024)
# The second door for mail into the desk: django-anymail's inbound webhooks
# (/anymail/<provider>/inbound/, for every provider it supports), mounted only once
# ANYMAIL_WEBHOOK_SECRET ("user:password", the basic auth given to the provider) is set, so the
# door is never open without a lock. Every ANYMAIL_* variable reaches anymail's settings without
# its prefix: ANYMAIL_MAILGUN_WEBHOOK_SIGNING_KEY, ANYMAIL_POSTMARK_SERVER_TOKEN, ...
ANYMAIL = env_prefixed("ANYMAIL_")
# Only the provider named here is mounted (its anymail name: mailgun, postmark, amazon_ses, ...);
# every other provider's path is 404. The secret and the provider come together, or neither.
SUPPORT_INBOUND_PROVIDER = (env_str("SUPPORT_INBOUND_PROVIDER") or "").lower()
SUPPORT_INBOUND_WEBHOOK = bool(ANYMAIL.get("WEBHOOK_SECRET"))
if bool(SUPPORT_INBOUND_PROVIDER) != SUPPORT_INBOUND_WEBHOOK:
    raise ImproperlyConfigured(
        "Set both ANYMAIL_WEBHOOK_SECRET and SUPPORT_INBOUND_PROVIDER (the provider whose "
        "inbound webhook is mounted), or neither."
    )
# Mail into the desk acts as a user (staff, or a customer in their account) only when the
# topmost Authentication-Results header written by one of these authserv-ids (our own MTA's,
# or the inbound provider's) says dmarc=pass for the From domain. Empty: no mail is.
SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS = env_list("SUPPORT_MAIL_TRUSTED_AUTHSERV_IDS", [])
# What customers see of staff (dashboard, API, mail): "team", the team's name only, or
# "first_name", a staff member's first name beside it. Never an address or a user id.
SUPPORT_STAFF_SHOWN_AS = (env_str("SUPPORT_STAFF_SHOWN_AS") or "team").lower()
if SUPPORT_STAFF_SHOWN_AS not in {"team", "first_name"}:
    raise ImproperlyConfigured("SUPPORT_STAFF_SHOWN_AS must be team or first_name.")
SUPPORT_TEAM_NAME = env_str("SUPPORT_TEAM_NAME") or "Support team"

# --- Django REST Framework and OpenAPI ------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["hosting.api.permissions.HasRequiredScopes"],
    "DEFAULT_RENDERER_CLASSES": ["hosting.api.renderers.EnvelopeJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["hosting.api.parsers.StrictJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "hosting.api.pagination.PageNumberPagination",
    "DEFAULT_FILTER_BACKENDS": ["hosting.api.filters.QueryParameterFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "hosting.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "hosting.api.exceptions.exception_handler",
    "DEFAULT_METADATA_CLASS": None,
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "hosting.api.negotiation.JsonOnlyNegotiation",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
    "NUM_PROXIES": NUM_PROXIES,
    "PAGE_SIZE": 25,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Hosting Management Service API",
    "DESCRIPTION": (
        "REST API for game servers, Discord bots, customers, billing, support tickets and "
        "analytics. Every request is authenticated with `Authorization: Bearer <API_KEY>`; keys "
        "are generated in the dashboard under Settings → API Keys. Successful responses are "
        '`{"success": true, "data": {...}}`; errors are `{"success": false, "error": {"code", '
        '"message", "details", "request_id"}}` with the stable codes listed on each operation.'
    ),
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_AUTHENTICATION": [],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ServerStatus": "servers.models.ServerStatus",
        "BackupStatus": "servers.models.BackupStatus",
        "NodeIsolation": "servers.models.NodeIsolation",
        "AccountStatus": "accounts.models.Account.Status",
        "ActionTargetType": ["server", "bot"],
        "PowerActionType": "servers.transitions.POWER_ACTIONS",
        "ServerPermission": "servers.services.permissions.PERMISSION_NAMES",
        "BalanceTransactionKind": "billing.models.BalanceTransaction.Kind",
        "ProductKind": "billing.models.ProductKind",
        "TicketPriority": "support.models.Priority",
        "TicketStatus": "support.models.TicketStatus",
        "TicketChannel": "support.models.Channel",
        "FileType": ["file", "folder", "link", "other"],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "hosting.api.schema.postprocess_envelopes",
        "idempotency.schema.document_idempotency",
        "analytics.api.docs.type_metric_points",
        "analytics.api.docs.split_csv_downloads",
    ],
}

# --- Logging --------------------------------------------------------------------------------
LOG_LEVEL = (env_str("LOG_LEVEL") or "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL must be a logging level name, got {LOG_LEVEL!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "hosting.api.request_ids.RequestIdLogFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"}
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # httpx logs every request URL at INFO; customers' webhook URLs may carry their tokens.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # Seven INFO lines per rendered PDF; refused URLs still warn through "weasyprint".
        "weasyprint.progress": {"level": "WARNING"},
    },
}
