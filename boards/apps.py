from django.apps import AppConfig


class BoardsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "boards"

    def ready(self) -> None:
        from boards import receivers  # noqa: F401  (connects score_accepted)
        from rediskit import credentials
        from scores.auth import credential_store_register

        # the players' credentials' part in Redis (docs/api.md §3.1, §3.2): the core never touches Redis
        credential_store_register(credentials)
