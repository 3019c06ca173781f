from django.apps import AppConfig


class CompetitionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "competitions"

    def ready(self) -> None:
        from competitions.rules import TournamentRefusals
        from competitions.tournaments import tournament_parse
        from scores.config import board_table_register
        from scores.ingest import result_refusals_register

        # the durable core calls up through these registrations; it imports nothing of ours
        board_table_register("tournament", tournament_parse)
        result_refusals_register(TournamentRefusals(), uid="competitions.tournaments")
