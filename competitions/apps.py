from django.apps import AppConfig


class CompetitionsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "competitions"

    def ready(self) -> None:
        from competitions.leagues import LeaguePlacement, league_parse, league_settle
        from competitions.rules import TournamentRefusals
        from competitions.selectors import league_group_frozen
        from competitions.settlement import rewards_parse, webhooks_parse
        from competitions.tournaments import tournament_parse
        from competitions.webhooks import webhook_events_write
        from scores.config import board_table_register
        from scores.ingest import result_refusals_register
        from seasons.selectors import frozen_part_register
        from seasons.services import freeze_hook_register

        # the durable core calls up through these registrations; it imports nothing of ours
        board_table_register("tournament", tournament_parse)
        result_refusals_register(TournamentRefusals(), uid="competitions.tournaments")
        board_table_register("rewards", rewards_parse)
        board_table_register("webhooks", webhooks_parse)
        board_table_register("league", league_parse)
        result_refusals_register(LeaguePlacement(), uid="competitions.leagues")
        # the leagues' outcome first: the settlement event is written after it, in the same transaction
        freeze_hook_register(league_settle, uid="competitions.leagues")
        freeze_hook_register(webhook_events_write, uid="competitions.webhooks")
        # the standings read's ?group=: a league group's own frozen standings
        frozen_part_register(league_group_frozen, uid="competitions.leagues")
