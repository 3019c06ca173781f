from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "anticheat"

    def ready(self) -> None:
        from anticheat import receivers  # noqa: F401  (connects the signal receivers)
        from anticheat.checks import SubmissionChecker
        from anticheat.selectors import games_moderated_by
        from anticheat.thresholds import thresholds_parse
        from scores.config import board_table_register
        from scores.ingest import submission_checks_register
        from scores.scoping import moderated_games_register

        # the durable core calls up through these registrations; it imports nothing of ours
        submission_checks_register(SubmissionChecker(), uid="anticheat.rules")
        board_table_register("anticheat", thresholds_parse)
        moderated_games_register(games_moderated_by)
