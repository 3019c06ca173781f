from celery import shared_task

from seasons import services


@shared_task(ignore_result=True)
def close_windows(now: str | None = None) -> dict:
    """Freeze every window whose grace period has passed (beat: every minute)."""
    from datetime import datetime

    report = services.windows_close(now=datetime.fromisoformat(now) if now else None)
    return {"frozen": report.frozen, "waiting": report.waiting, "already": report.already, "failed": report.failed}
