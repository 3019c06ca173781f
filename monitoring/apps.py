from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """Operations: /healthz, /metrics (Prometheus), heartbeats of the Celery worker and beat."""

    name = "monitoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import got_request_exception
        from django.db.backends.signals import connection_created

        from monitoring import metrics

        connection_created.connect(metrics.postgres_errors_watch, dispatch_uid="monitoring.postgres_errors_watch")
        got_request_exception.connect(metrics.request_exception_count, dispatch_uid="monitoring.request_exceptions")
