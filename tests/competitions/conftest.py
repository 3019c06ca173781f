"""The seasons tests' day of results, for the settlement tests."""

from tests.seasons.conftest import day  # noqa: F401  (a fixture)
