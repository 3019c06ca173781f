"""Settings for the leaderboard service.

Everything that differs between machines comes from the environment; the defaults are
what a developer's machine (and `make run` / `make test`) uses.
"""

import os
import warnings
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


SECRET_KEY = os.environ.get("SECRET_KEY", "dev-only-insecure-secret-key-change-me")
# Server-key secrets are derived from this pepper and never stored, so a database dump
# alone cannot sign requests. Changing it invalidates every issued server key.
SERVER_KEY_PEPPER = os.environ.get("SERVER_KEY_PEPPER", SECRET_KEY)
DEBUG = env_bool("DEBUG", False)
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
    "channels",
    "scores",
    "boards",
    "anticheat",
    "seasons",
    "pages",  # the player web pages (HTML)
    "demo",  # the demo game make run loads and plays
]

MIDDLEWARE = [
    "leaderboard_project.middleware.BodySizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
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
DATABASES = {"default": dj_database_url.parse(DATABASE_URL)}
# One small pool per process. Under ASGI each sync view runs on a worker thread, and
# persistent per-thread connections would grow with the thread pool until Postgres refuses
# clients; a pool caps what each process holds.
DATABASES["default"]["OPTIONS"] = {
    "connect_timeout": 5,
    "pool": {
        "min_size": int(os.environ.get("DB_POOL_MIN", "1")),
        "max_size": int(os.environ.get("DB_POOL_MAX", "16")),
        "timeout": float(os.environ.get("DB_POOL_TIMEOUT", "30")),
    },
}

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
# Short timeouts: with Redis down, a submission must still answer quickly (Postgres holds it).
REDIS_SOCKET_TIMEOUT = float(os.environ.get("REDIS_SOCKET_TIMEOUT", "0.5"))

CACHES = {
    "default": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cache",
        "OPTIONS": {
            "SOCKET_CONNECT_TIMEOUT": REDIS_SOCKET_TIMEOUT,
            "SOCKET_TIMEOUT": REDIS_SOCKET_TIMEOUT,
            # The cache is an optimisation: a Redis outage must not turn reads into 5xx.
            "IGNORE_EXCEPTIONS": True,
        },
    }
}
DJANGO_REDIS_IGNORE_EXCEPTIONS = True
DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True

# Live updates (docs/live.md). Pub/sub: a group message is one PUBLISH that Redis hands to each
# web process once, whatever the number of sockets. Pub/sub channels are shared by every
# database of a Redis server, so the prefix names the database: two deployments (or two test
# runs) on one server never hear each other.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": os.environ.get("CHANNEL_LAYER_BACKEND", "channels_redis.pubsub.RedisPubSubChannelLayer"),
        "CONFIG": {
            "hosts": [os.environ.get("CHANNEL_REDIS_URL", REDIS_URL)],
            "prefix": os.environ.get("CHANNEL_LAYER_PREFIX", f"channels.db{REDIS_URL.rsplit('/', 1)[-1] or 0}."),
        },
    }
}
# At most one live top-10 message per board window per this many seconds (docs/live.md)...
LIVE_INTERVAL_SECONDS = float(os.environ.get("LIVE_INTERVAL_SECONDS", "1.0"))
# ...while players' own rank and "passed" messages follow at this cadence.
LIVE_TICK_SECONDS = float(os.environ.get("LIVE_TICK_SECONDS", "0.5"))

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

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "leaderboard_project.errors.exception_handler",
    "UNAUTHENTICATED_USER": None,
    # Proxies in front of the workers that set X-Forwarded-For: rate limits per address count the
    # address they saw. scripts/web.py sets 1 behind its nginx; 0 (a direct client) otherwise.
    "NUM_PROXIES": int(os.environ.get("NUM_PROXIES", "0")),
    "DEFAULT_THROTTLE_RATES": {
        # player reads (rank, friends) per player token or signed-in user, and per client address
        "player_reads": os.environ.get("THROTTLE_PLAYER_READS", "120/min"),
        "address_reads": os.environ.get("THROTTLE_ADDRESS_READS", "1200/min"),
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Leaderboard service API",
    "DESCRIPTION": "Real-time game leaderboards: signed result ingestion, exact ranks, windows and seasons.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# Contract section 3: signatures older or newer than this are refused.
SIGNATURE_MAX_SKEW_SECONDS = 300
# Contract section 7: how long a player's bearer token lives.
PLAYER_TOKEN_TTL_SECONDS = int(os.environ.get("PLAYER_TOKEN_TTL_SECONDS", str(24 * 3600)))
# One-time login links a game's server makes for a player (docs/players.md).
LOGIN_LINK_TTL_SECONDS = int(os.environ.get("LOGIN_LINK_TTL_SECONDS", "900"))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
# Contract section 4: ended_at more than this far in the future is refused.
MAX_ENDED_AT_FUTURE_SECONDS = 60

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Outbox rows older than this are presumed missed by the post-commit fast path.
BOARD_SYNC_GRACE_SECONDS = float(os.environ.get("BOARD_SYNC_GRACE_SECONDS", "2"))
CELERY_BEAT_SCHEDULE = {
    "boards-sync-pending": {"task": "boards.tasks.sync_pending", "schedule": 2.0},
    # live updates held back by the one-per-second limit: a safety net for their scheduled flush
    "boards-live-flush": {"task": "boards.tasks.live_flush", "schedule": 1.0, "options": {"expires": 1.0}},
    "seasons-close-windows": {"task": "seasons.tasks.close_windows", "schedule": 60.0},
    # a run still queued when the next one is due is dropped (expires): slow runs never pile up
    "boards-refresh-rolling": {"task": "boards.tasks.refresh_rolling", "schedule": 60.0, "options": {"expires": 55}},
    "boards-refresh-histograms": {
        "task": "boards.tasks.refresh_histograms",
        "schedule": 60.0,
        "options": {"expires": 55},
    },
    # the recent statistics the board_top and server_outlier rules compare against
    "anticheat-refresh-stats": {
        "task": "anticheat.tasks.refresh_stats",
        "schedule": 300.0,
        "options": {"expires": 290},
    },
}
# Enqueue the heavier anti-cheat checks (Celery) on every accepted match (docs/moderation.md).
ANTICHEAT_ASYNC_CHECKS = os.environ.get("ANTICHEAT_ASYNC_CHECKS", "1") != "0"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
