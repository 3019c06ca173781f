from django.apps import AppConfig


class PagesConfig(AppConfig):
    """The player web pages (HTML): games, boards, players, the archive, sign-in. Nothing
    imports this app; it reads through the other apps' selectors (docs/players.md)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "pages"
