from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "anticheat"

    def ready(self) -> None:
        from anticheat import receivers  # noqa: F401  (connects the signal receivers)
