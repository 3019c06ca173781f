"""Fixtures for tests/security."""

from tests.boards.test_redis_down import throwaway_redis  # noqa: F401  (a fixture for tests/security)
