"""The Redis connection the ranking engine uses (django-redis' pool for the default cache)."""

from django_redis import get_redis_connection
from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# What "Redis is unreachable" looks like to callers that degrade instead of failing.
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError, OSError)


def get_redis() -> Redis:
    return get_redis_connection("default")
