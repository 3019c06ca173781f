from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo game `make run` loads and plays (demo_load, demo_traffic). Nothing imports this
    app: it registers what the other apps show about it here, in ready()."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "demo"

    def ready(self) -> None:
        from demo.names import demo_login_hint
        from scores.accounts import login_hint_register

        login_hint_register("demo", demo_login_hint)
