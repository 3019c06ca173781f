"""Settings for the leaderboard service.

Everything that differs between machines comes from the environment; the defaults are
what a developer's machine (and `make run` / `make test`) uses.
"""

import os
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from leaderboard_project.database import database_from_url, pool_reconnect_steadily
from leaderboard_project.proxies import trusted_proxies_parse
from rediskit.breaker import guarded_connection_class

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DEBUG", False)
# SECRET_KEY signs sessions and player tokens; server-key secrets are derived from
# SERVER_KEY_PEPPER and never stored, so a database dump alone cannot sign requests (changing
# the pepper invalidates every issued server key). Both come from the environment: `make run`
# and `make manage` fill them from this install's .local/secrets.env, random values written on
# first use (scripts/services.py). With DEBUG off the service refuses to start without them,
# on a value published here, or with one value for both.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
SERVER_KEY_PEPPER = os.environ.get("SERVER_KEY_PEPPER", "")
PUBLISHED_SECRETS = frozenset({"", "dev-only-insecure-secret-key-change-me", "dev-only-insecure-pepper-change-me"})
MIN_SECRET_LENGTH = 32


def secrets_problem(secret_key: str, pepper: str) -> str | None:
    """Why these secrets must not serve a real deployment, or None."""
    for name, value in (("SECRET_KEY", secret_key), ("SERVER_KEY_PEPPER", pepper)):
        if value in PUBLISHED_SECRETS:
            return f"{name} is {'not set' if not value else 'a published default'}"
        if len(value) < MIN_SECRET_LENGTH:
            return f"{name} is shorter than {MIN_SECRET_LENGTH} characters"
    if secret_key == pepper:
        return "SECRET_KEY and SERVER_KEY_PEPPER are the same value"
    return None


if (_problem := secrets_problem(SECRET_KEY, SERVER_KEY_PEPPER)) is not None:
    if not DEBUG:
        raise ImproperlyConfigured(
            f"refusing to start with DEBUG off: {_problem}. Set SECRET_KEY and SERVER_KEY_PEPPER to two "
            "distinct random values (make run and make manage write them to .local/secrets.env), or DEBUG=1 "
            "for development with throwaway defaults."
        )
    warnings.warn(f"DEBUG on with insecure secrets ({_problem}): for development only", stacklevel=1)
    SECRET_KEY = SECRET_KEY or "dev-only-insecure-secret-key-change-me"
    SERVER_KEY_PEPPER = SERVER_KEY_PEPPER or "dev-only-insecure-pepper-change-me"
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc as pinned local static files (no CDN)
    "channels",
    "scores",
    "boards",
    "anticheat",
    "seasons",
    "competitions",  # tournaments (docs/competitions.md)
    "monitoring",
    "pages",  # the player web pages (HTML)
    "demo",  # the demo game make run loads and plays
    "axes",  # failed sign-ins, counted per (account, client address) and per address
]

MIDDLEWARE = [
    # first: times the whole request and counts its answer (/metrics, docs/operations.md)
    "monitoring.metrics.RequestMetricsMiddleware",
    # CORS for browser game clients, outside everything that may answer early (a 503, a 413),
    # so a page on an allowed origin can read those too (leaderboard_project/cors.py)
    "leaderboard_project.cors.CorsMiddleware",
    # public reads per client address, before anything reads a board (leaderboard_project/limits.py)
    "leaderboard_project.limits.PublicReadLimitMiddleware",
    "leaderboard_project.middleware.BodySizeLimitMiddleware",
    # lagging-tolerant reads to the read replica, and again from the primary if it fails under them
    "leaderboard_project.replicas.ReplicaReadsMiddleware",
    # Postgres unreachable: 503 + Retry-After with the error body of docs/api.md §14, not a 500
    "leaderboard_project.database.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on the pages, with a nonce per request (leaderboard_project/security.py)
    "leaderboard_project.security.ContentSecurityPolicyMiddleware",
    # static files (the admin's CSS, the player pages' assets) from the web process itself
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's session, auth and messages middleware, stepping aside for API requests that carry
    # a player token or a signature (leaderboard_project/middleware.py)
    "leaderboard_project.middleware.ApiSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "leaderboard_project.middleware.ApiAuthenticationMiddleware",
    "leaderboard_project.middleware.ApiMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "leaderboard_project.urls"

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
            ],
        },
    },
]

WSGI_APPLICATION = "leaderboard_project.wsgi.application"
ASGI_APPLICATION = "leaderboard_project.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/leaderboard")
# One small pool per process. Under ASGI each sync view runs on a worker thread, and
# persistent per-thread connections would grow with the thread pool until Postgres refuses
# clients; a pool caps what each process holds.
# With Postgres down a request waits at most DB_POOL_TIMEOUT for a connection, then answers
# 503 (leaderboard_project/database.py); the pool retries Postgres every 0.5 s meanwhile.
DATABASE_OPTIONS = {
    "connect_timeout": 2,
    # A primary that vanished mid-statement (a machine lost, not a process: the kernel of a
    # machine that died sends no reset): unacknowledged data for this long breaks the connection,
    # and idle ones are probed, so a request fails over to a 503 instead of waiting for TCP's
    # minutes-long retransmissions (docs/operations.md, "High availability").
    "tcp_user_timeout": int(os.environ.get("DB_TCP_USER_TIMEOUT_MS", "1000")),
    "keepalives_idle": 2,
    "keepalives_interval": 1,
    "keepalives_count": 2,
    # Django turns psycopg's prepared statements off (for poolers that cannot keep them); the
    # ingest statement and the projector's fold ask for preparation explicitly (scores/sql.py)
    # and nothing else is prepared (Django binds its own statements on the client). Behind a
    # pooler in transaction mode that cannot keep prepared statements: DB_PREPARED_STATEMENTS=0.
    "prepare_threshold": 10**9 if env_bool("DB_PREPARED_STATEMENTS", True) else None,
    # Postgres' JIT compiles a statement whose estimated cost is high, at every execution. The
    # projector's fold and the ingest's append are such statements on a large board, right
    # after a burst of writes the statistics have not caught up with: the compile took ~2.4 s
    # where the statement itself took milliseconds (docs/operations.md, "JIT"). DB_JIT=1 lets
    # the server's own setting decide.
    **({} if env_bool("DB_JIT", False) else {"options": "-c jit=off"}),
    "pool": {
        "min_size": int(os.environ.get("DB_POOL_MIN", "1")),
        "max_size": int(os.environ.get("DB_POOL_MAX", "16")),
        "timeout": float(os.environ.get("DB_POOL_TIMEOUT", "0.5")),
    },
}
if os.environ.get("DB_POOL", "1") == "0":
    # behind pgbouncer (or another pooler) in transaction mode: no pool of our own
    # (docs/operations.md, "Connection pooling")
    del DATABASE_OPTIONS["pool"]
DATABASES = {"default": database_from_url(DATABASE_URL, options=DATABASE_OPTIONS)}
# scores/sql.py prepares its hot statements only while this holds (pgbouncer 1.18 in transaction
# mode cannot keep a prepared statement from one transaction to the next)
DB_PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", True)
# Behind a transaction pooler a server-side cursor (exports, rebuilds) would outlive its
# transaction's server connection: DB_SERVER_SIDE_CURSORS=0 reads such results whole instead.
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = not env_bool("DB_SERVER_SIDE_CURSORS", True)
# Several hosts (a primary and its standbys): a pooled connection is checked before each use, so
# connections to a primary that died are replaced at once after a failover, not each answered
# with one 503 (an empty query per checkout; one host: off, the error handling covers it).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = env_bool("DB_HEALTH_CHECKS", "," in DATABASES["default"]["HOST"])
pool_reconnect_steadily()
# Reads that may lag a little (player pages, the season archive, frozen standings, CSV exports,
# histogram refreshes, admin list pages) go to a streaming replica when one is named and its lag
# is within DATABASE_REPLICA_MAX_LAG seconds; never a read of the caller's own write
# (leaderboard_project/replicas.py, docs/operations.md "Read replicas"). Several hosts: libpq
# picks one at random (load_balance_hosts), a standby first (target_session_attrs=prefer-standby).
DATABASE_REPLICA_URL = os.environ.get("DATABASE_REPLICA_URL", "").strip()
DATABASE_REPLICA_MAX_LAG = float(os.environ.get("DATABASE_REPLICA_MAX_LAG", "5"))
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = database_from_url(DATABASE_REPLICA_URL, options=DATABASE_OPTIONS)
    replica_options = DATABASES["replica"]["OPTIONS"]
    replica_options.setdefault("target_session_attrs", "prefer-standby")
    if "," in DATABASES["replica"]["HOST"]:
        replica_options.setdefault("load_balance_hosts", "random")
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
DATABASE_ROUTERS = ["leaderboard_project.replicas.ReplicaRouter"]

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
_redis_parts = urlsplit(REDIS_URL)
# unix:///path/redis.sock?db=N (scripts/services.py's own Redis) or redis://host:port/N
REDIS_DB = (
    dict(p.split("=", 1) for p in _redis_parts.query.split("&") if "=" in p).get("db", "0")
    if _redis_parts.scheme == "unix"
    else _redis_parts.path.lstrip("/") or "0"
)
# Short timeouts: with Redis down, a submission must still answer quickly (Postgres holds it).
# A Redis that answers nothing (SIGSTOP, a full network buffer) costs each process on the submit
# path one such wait, then its breaker fails fast (rediskit/breaker.py): 0.2 s keeps a submission
# behind web and the append service, and the projector's mirror, inside docs/api.md's bounds
# (docs/reliability.md, "Redis hung"). `make run` gives what no request waits on 1 s
# (scripts/run.py background_env): a rebuild's long pipeline replies.
REDIS_SOCKET_TIMEOUT = float(os.environ.get("REDIS_SOCKET_TIMEOUT", "0.2"))

# The ranking index (sorted sets, their scripts, histograms) on a Redis Cluster: any node's URL,
# e.g. redis://127.0.0.1:7001 (the client discovers the rest). Unset: everything on REDIS_URL.
REDIS_CLUSTER_URL = os.environ.get("REDIS_CLUSTER_URL", "").strip()
# Stale-tolerant reads (top pages, histograms) from the cluster's replicas; a player's own rank
# stays on the primaries (docs/reads.md).
REDIS_READ_FROM_REPLICAS = os.environ.get("REDIS_READ_FROM_REPLICAS", "0") == "1"

CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cache",
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": REDIS_SOCKET_TIMEOUT,
            "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT,
            # after the first timeout or refusal, fail at once until Redis answers again
            # (rediskit/breaker.py): a hung Redis costs one timeout, not one per command
            "CONNECTION_POOL_KWARGS": {"connection_class": guarded_connection_class(REDIS_URL)},
            # The cache is an optimisation: a Redis outage must not turn reads into 5xx.
            "IGNORE_EXCEPTIONS": True,
            # redis-py's pool, counting failed connects, sends and reads for /metrics
            "CONNECTION_POOL_CLASS": "monitoring.redis.CountingConnectionPool",
        },
    }
}
DJANGO_REDIS_IGNORE_EXCEPTIONS = True
# The breaker logs each Redis state change once; a traceback per ignored cache call drowned it.
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = False

# Live updates (docs/live.md). Pub/sub: a group message is one PUBLISH that Redis hands to each
# web process once, whatever the number of sockets. Pub/sub channels are shared by every
# database of a Redis server, so the prefix names the database: two deployments (or two test
# runs) on one server never hear each other.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": os.environ.get("CHANNEL_LAYER_BACKEND", "channels_redis.pubsub.RedisPubSubChannelLayer"),
        "CONFIG": {
            "hosts": [os.environ.get("CHANNEL_REDIS_URL", REDIS_URL)],
            "prefix": os.environ.get("CHANNEL_LAYER_PREFIX", f"channels.db{REDIS_DB}."),
        },
    }
}
# At most one live top-10 message per board window per this many seconds (docs/live.md)...
# 0.75, not docs/api.md §9's 1: a change inside the interval waits for its end, and 1 s on top
# of the projector's delay breaks docs/api.md §4's 1 s from the 2xx (docs/reliability.md).
LIVE_INTERVAL_SECONDS = float(os.environ.get("LIVE_INTERVAL_SECONDS", "0.75"))
# ...while players' own rank and "passed" messages follow at this cadence.
LIVE_TICK_SECONDS = float(os.environ.get("LIVE_TICK_SECONDS", "0.5"))

# A computed /top page is reused for the rest of its period of the wall clock (boards/api/top.py).
# A divisor of a second, so periods end on whole seconds with the edge cache's (docs/reads.md);
# short, because a page's age adds to the projector's delay against docs/api.md §4's 1 s.
TOP_CACHE_SECONDS = float(os.environ.get("TOP_CACHE_SECONDS", "0.25"))

# Password guessing (docs/operations.md, "Sign-in throttling"): django-axes counts failed
# sign-ins in Postgres; after SIGNIN_FAILURES_PER_USER failures for one account from one client
# address, or SIGNIN_FAILURES_PER_ADDRESS from one address, that address's attempts (the right
# password too) are refused until SIGNIN_THROTTLE_SECONDS after the last failure.
# AUTHENTICATION_BACKENDS[0] also signs in login links (pages/signin.py): a full ModelBackend.
AUTHENTICATION_BACKENDS = ["leaderboard_project.security.SigninBackend"]
SIGNIN_FAILURES_PER_USER = int(os.environ.get("SIGNIN_FAILURES_PER_USER", "5"))
SIGNIN_FAILURES_PER_ADDRESS = int(os.environ.get("SIGNIN_FAILURES_PER_ADDRESS", "20"))
SIGNIN_THROTTLE_SECONDS = int(os.environ.get("SIGNIN_THROTTLE_SECONDS", "900"))
AXES_HANDLER = "leaderboard_project.security.SigninAttempts"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_FAILURE_LIMIT = "leaderboard_project.security.signin_failure_limit"
AXES_COOLOFF_TIME = "leaderboard_project.security.signin_cool_off"
AXES_CLIENT_IP_CALLABLE = "leaderboard_project.proxies.client_address"
# No AxesMiddleware: it only swaps the answer of a locked-out sign-in for its own page, and our
# sign-in forms say it themselves (leaderboard_project/security.py); it cost ~1.7 us on every
# request (docs/operations.md, "Sign-in throttling").
SILENCED_SYSTEM_CHECKS = ["axes.W002"]
# Never: a success would clear the address's count of every account's failures, and a guesser
# with an account of their own would sign into it between guesses.
AXES_RESET_ON_SUCCESS = False
# The log names the client address of a failure, never the username typed (it may be a password)
AXES_SENSITIVE_PARAMETERS = ["username"]
AXES_DISABLE_ACCESS_LOG = True  # the throttle only; successful sign-ins are not logged here
AXES_ENABLE_ADMIN = False  # operators reset with `manage.py axes_reset_ip` & co (docs/operations.md)

# The proxies in front of the service (docs/operations.md, "Behind a load balancer"): addresses
# or CIDRs, comma-separated; make run's own nginx (loopback) is always trusted. The client
# address every per-address limit counts is the rightmost X-Forwarded-For address that is not
# one of them (leaderboard_project/proxies.py).
try:
    TRUSTED_PROXIES = trusted_proxies_parse(os.environ.get("TRUSTED_PROXIES", ""))
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# A deployment behind a TLS-terminating proxy (docs/operations.md, "Production settings"):
# DEPLOY_HTTPS=1 makes `manage.py check --deploy` clean. The proxy must set X-Forwarded-Proto
# (scripts/web.py's nginx passes it on) and be the only way in.
DEPLOY_HTTPS = env_bool("DEPLOY_HTTPS", False)
if DEPLOY_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    # load balancers' and scrapers' probes often come over plain HTTP from inside
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("DEPLOY_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DEPLOY_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("DEPLOY_HSTS_PRELOAD", True)
# The site's public https origins when the proxy's host differs from ALLOWED_HOSTS' (forms, admin)
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# Browser game clients' origins allowed for every game, on top of each game's own
# `[game] allowed_origins` (docs/clients.md): "https://play.example.com,https://beta.example.com"
CORS_ALLOWED_ORIGINS = [o.strip() for o in os.environ.get("CORS_ALLOWED_ORIGINS", "").split(",") if o.strip()]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Served straight from the apps' and static/ folders: no collectstatic step before `make run`.
WHITENOISE_USE_FINDERS = True
# With finders, STATIC_ROOT exists only after an optional collectstatic (production images).
# (WhiteNoise warns with stacklevel pointing into Django, so filter by message, not module.)
warnings.filterwarnings("ignore", message="No directory at: .*staticfiles", category=UserWarning)
WHITENOISE_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Request bodies: a batch of 1000 matches fits comfortably; anything larger is refused
# with 413 before it is read.
MAX_REQUEST_BODY_BYTES = int(os.environ.get("MAX_REQUEST_BODY_BYTES", str(16 * 1024 * 1024)))
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["leaderboard_project.parsers.BoundedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "leaderboard_project.schema.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard_project.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_RATES": {
        # player reads (rank, friends) per player token or signed-in user, and per client address
        "player_reads": os.environ.get("THROTTLE_PLAYER_READS", "120/min"),
        "address_reads": os.environ.get("THROTTLE_ADDRESS_READS", "1200/min"),
    },
}
# Public reads (top, histogram, standings, game descriptions, the pages) and websocket
# handshakes per client address (leaderboard_project/limits.py; scripts/web.py gives nginx the
# first too); "" turns one off. docs/api.md §15.
THROTTLE_PUBLIC_READS = os.environ.get("THROTTLE_PUBLIC_READS", "1200/min")
THROTTLE_WEBSOCKETS = os.environ.get("THROTTLE_WEBSOCKETS", "120/min")

SPECTACULAR_SETTINGS = {
    "TITLE": "Leaderboard service API",
    "DESCRIPTION": "Real-time game leaderboards: signed result ingestion, exact ranks, windows and seasons.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # one name per set of statuses (drf-spectacular would call them StatusC58Enum and the like)
    "ENUM_NAME_OVERRIDES": {
        "MatchStatusEnum": ["accepted", "held", "voided"],
        "BatchItemStatusEnum": ["accepted", "held", "voided", "rejected"],
    },
    # /api/docs/ and /api/redoc/ load their JavaScript from this server (drf-spectacular-sidecar,
    # pinned in requirements.txt), so they render on a machine without internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# docs/api.md §3.1: signatures older or newer than this are refused.
SIGNATURE_MAX_SKEW_SECONDS = 300
# docs/api.md §3.2: how long a player's bearer token lives.
PLAYER_TOKEN_TTL_SECONDS = int(os.environ.get("PLAYER_TOKEN_TTL_SECONDS", str(24 * 3600)))
# docs/api.md §3.2: how often a websocket process checks its open sockets' tokens for revocation.
PLAYER_TOKEN_RECHECK_SECONDS = float(os.environ.get("PLAYER_TOKEN_RECHECK_SECONDS", "2"))
# One-time login links a game's server makes for a player (docs/players.md).
LOGIN_LINK_TTL_SECONDS = int(os.environ.get("LOGIN_LINK_TTL_SECONDS", "900"))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# The state file of `make run`'s supervisor (scripts/run.py sets it for its children): /healthz
# and /metrics name a process that is down while it is restarted (monitoring/processes.py).
PROCESS_STATE_FILE = os.environ.get("LEADERBOARD_PROCESS_STATE", "").strip()
# docs/api.md §4: ended_at more than this far in the future is refused.
MAX_ENDED_AT_FUTURE_SECONDS = 60
# Admission control (docs/api.md §4.5, scores/admission.py, docs/operations.md): a submission is
# refused 503 `overloaded` before anything is stored while the projector's oldest pending row is
# older than ADMISSION_MAX_LAG_MS (0: never refuse) or more than ADMISSION_MAX_PENDING matches wait;
# each process reads the backlog at most once per ADMISSION_REFRESH_MS.
ADMISSION_MAX_LAG_MS = float(os.environ.get("ADMISSION_MAX_LAG_MS", "500"))
ADMISSION_MAX_PENDING = int(os.environ.get("ADMISSION_MAX_PENDING", "2500"))
ADMISSION_REFRESH_MS = float(os.environ.get("ADMISSION_REFRESH_MS", "50"))
# Group commit for single submissions (scores/ingest/gather.py, docs/operations.md): with
# WEB_APPEND_SERVICE=1 (what `make run` sets) the web processes hand single matches to the local
# append service (`manage.py append_service`, on WEB_APPEND_SOCKET), which stores what arrives
# within WEB_APPEND_GATHER_MS (or until WEB_APPEND_GATHER_MAX wait) in one transaction; a request
# the service does not answer within WEB_APPEND_TIMEOUT_MS, or while it is not running, is
# answered 503 overloaded (its sender retries; the unique match id stores it once).
WEB_APPEND_SERVICE = os.environ.get("WEB_APPEND_SERVICE", "0") == "1"
WEB_APPEND_SOCKET = os.environ.get("WEB_APPEND_SOCKET") or str(BASE_DIR / ".local" / "run" / "append.sock")
WEB_APPEND_TIMEOUT_MS = float(os.environ.get("WEB_APPEND_TIMEOUT_MS", "5000"))
WEB_APPEND_GATHER_MS = float(os.environ.get("WEB_APPEND_GATHER_MS", "4"))
WEB_APPEND_GATHER_MAX = int(os.environ.get("WEB_APPEND_GATHER_MAX", "64"))

# kombu names a unix socket redis+socket:///path?virtual_host=N
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or (
    f"redis+socket://{_redis_parts.path}?virtual_host={REDIS_DB}" if _redis_parts.scheme == "unix" else REDIS_URL
)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# Redis (the broker) lost: the worker and beat reconnect, at start and later, for as long as it
# takes, instead of giving up after 100 tries. What no setting covers (kombu's restore_unacked
# failing on a lost connection ends the worker with "Unrecoverable error") `make run`'s
# supervisor restarts (docs/reliability.md, "Processes restarted").
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
# tasks running when the broker goes are cancelled (they are periodic and idempotent: the next
# run redoes them), as Celery 6 will by default, rather than acknowledged on a dead connection
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# No task runs unbounded (docs/operations.md, "Celery queues and time limits"): past the soft
# limit a task is interrupted, past the hard one its process is replaced. The tasks are periodic
# and idempotent; the next run redoes what one cut short.
CELERY_TASK_SOFT_TIME_LIMIT = int(os.environ.get("CELERY_TASK_SOFT_TIME_LIMIT", "300"))
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CELERY_TASK_TIME_LIMIT", "330"))
# Settlement webhooks go to a queue of their own with a worker of their own (`make run`'s
# `webhooks` process): a receiver that never answers holds none of the default queue's work.
CELERY_TASK_ROUTES = {"competitions.tasks.deliver_webhooks": {"queue": "webhooks"}}
# Outbox rows older than this are presumed missed by the post-commit fast path.
BOARD_SYNC_GRACE_SECONDS = float(os.environ.get("BOARD_SYNC_GRACE_SECONDS", "2"))
CELERY_BEAT_SCHEDULE = {
    # every beat task expires by its next run: a run still queued then is dropped, never piled up
    "boards-sync-pending": {"task": "boards.tasks.sync_pending", "schedule": 2.0, "options": {"expires": 2.0}},
    # live updates held back by the one-per-second limit: a safety net for their scheduled flush
    "boards-live-flush": {"task": "boards.tasks.live_flush", "schedule": 1.0, "options": {"expires": 1.0}},
    "seasons-close-windows": {"task": "seasons.tasks.close_windows", "schedule": 60.0, "options": {"expires": 55}},
    # tournaments past their end and grace: their final standings and `tournament.ended` (docs/competitions.md)
    "competitions-close-tournaments": {
        "task": "competitions.tasks.close_tournaments",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # settlement webhooks due (docs/competitions.md); a freeze also queues a run after its commit
    "competitions-deliver-webhooks": {
        "task": "competitions.tasks.deliver_webhooks",
        "schedule": 5.0,
        "options": {"expires": 5.0},
    },
    # a run still queued when the next one is due is dropped (expires): slow runs never pile up
    "boards-refresh-rolling": {"task": "boards.tasks.refresh_rolling", "schedule": 60.0, "options": {"expires": 55}},
    # the index sampler (boards/healing.py): drift repaired and counted in /metrics
    "boards-sample-index": {"task": "boards.tasks.sample_index", "schedule": 60.0, "options": {"expires": 55}},
    "boards-refresh-histograms": {
        "task": "boards.tasks.refresh_histograms",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # the after-the-fact checks' backlog, for what a wake-up missed (Redis down: anticheat/after.py)
    "anticheat-check-pending": {"task": "anticheat.tasks.check_pending", "schedule": 30.0, "options": {"expires": 25}},
    # the recent statistics the board_top and server_outlier rules compare against
    "anticheat-refresh-stats": {
        "task": "anticheat.tasks.refresh_stats",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
}
# Settlement webhooks (docs/competitions.md): the base of the standings_url their events carry;
# how long one attempt may take in all (DNS, connect, send, answer), at most 10 s (docs/api.md
# §13); WEBHOOK_ALLOW_PRIVATE=1 lets receivers be on loopback or private addresses (local
# development and tests only: docs/competitions.md, "Receivers").
PUBLIC_BASE_URL = os.environ.get("PUBLIC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")
WEBHOOK_TIMEOUT_SECONDS = min(float(os.environ.get("WEBHOOK_TIMEOUT_SECONDS", "10")), 10.0)
WEBHOOK_ALLOW_PRIVATE = os.environ.get("WEBHOOK_ALLOW_PRIVATE", "0") == "1"

# The events feed (docs/api.md §13.1, scores/events.py): whole days of it older than this are
# dropped by the projector's hourly upkeep; a cursor into them is answered 410 cursor_expired.
EVENTS_RETENTION_DAYS = max(1, int(os.environ.get("EVENTS_RETENTION_DAYS", "7")))
# Enqueue the heavier anti-cheat checks (Celery) on every accepted match (docs/moderation.md).
ANTICHEAT_ASYNC_CHECKS = os.environ.get("ANTICHEAT_ASYNC_CHECKS", "1") != "0"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # django-axes: a line per failed sign-in and per lock-out, not its per-attempt chatter
        "axes": {"level": "WARNING"},
    },
}
