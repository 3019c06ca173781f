"""Side effects after commit go through one helper, as Zulip's send_event_on_commit: a signal
sent only once the transaction that caused it has committed (at once outside a transaction)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.dispatch import Signal


def send_on_commit(signal: Signal, *, sender: Any = None, **kwargs: Any) -> None:
    transaction.on_commit(lambda: signal.send(sender=sender, **kwargs))
