"""The projector as a real process: the fixture lives in tests/projector.py, for every directory."""

from tests.projector import APP_NAME, projector_process  # noqa: F401
