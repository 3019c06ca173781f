from django.apps import AppConfig


class ScoresConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scores"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from scores import schema  # noqa: F401  (registers the OpenAPI auth extensions)
        from scores.auth import server_keys_changed
        from scores.models import Board, Game, Region, Season, ServerKey
        from scores.selectors import config_cache_clear

        # processes caching keys or configuration read them again once a change commits
        post_save.connect(server_keys_changed, sender=ServerKey, dispatch_uid="server-keys-changed-save")
        post_delete.connect(server_keys_changed, sender=ServerKey, dispatch_uid="server-keys-changed-delete")
        for model in (Game, Board, Season, Region):
            post_save.connect(config_cache_clear, sender=model, dispatch_uid=f"config-cache-{model.__name__}-save")
            post_delete.connect(config_cache_clear, sender=model, dispatch_uid=f"config-cache-{model.__name__}-delete")
