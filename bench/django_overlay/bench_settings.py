"""Settings of the servers the bench starts: the measured project's own, with one more URL.

This directory is put first on the servers' PYTHONPATH (it is not a package: under
`--code REV` the exported tree has a `bench/` of its own, which would shadow ours), and
DJANGO_SETTINGS_MODULE=bench_settings. Nothing else differs from leaderboard_project.settings."""

from leaderboard_project.settings import *  # noqa: F403

ROOT_URLCONF = "bench_urls"
