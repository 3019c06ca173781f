from django.apps import AppConfig


class AnticheatConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "anticheat"
