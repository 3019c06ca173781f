from django.apps import AppConfig


class ScoresConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "scores"

    def ready(self) -> None:
        from scores import schema  # noqa: F401  (registers the OpenAPI auth extensions)
