"""The test settings with two routes that fail (tests/pages/boom_urls.py): what a browser sees
when a page has a bug."""

from leaderboard_project.settings_test import *  # noqa: F403

ROOT_URLCONF = "tests.pages.boom_urls"
