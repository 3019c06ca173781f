from django.apps import AppConfig


class BoardsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "boards"

    def ready(self) -> None:
        from boards import receivers  # noqa: F401  (connects score_accepted)
