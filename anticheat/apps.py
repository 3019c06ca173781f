from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "anticheat"

    def ready(self) -> None:
        from anticheat import receivers  # noqa: F401  (connects the signal receivers)
        from anticheat.checks import SubmissionChecker
        from scores.ingest import submission_checks_register

        submission_checks_register(SubmissionChecker(), uid="anticheat.rules")
