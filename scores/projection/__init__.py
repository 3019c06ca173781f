"""The projector: applies committed matches to players, values and (through boards/) Redis.

Ingest (scores/ingest/) makes a submission durable and queues its matches in scores_pending;
the projector applies them in batches, each batch one transaction that deletes the pending rows
it applied, so its progress commits with the values it wrote:

- batch.py   one batch: claim, read the results, apply, and the drain moderation and freezes use
- values.py  the fold: windows, per-batch aggregation, the GREATEST / sum upserts, the outbox
- runner.py  the long-running process (`manage.py projector`): LISTEN/NOTIFY, lanes, lag

docs/architecture.md ("Ingest: append, then project") explains the design and its guarantees.
"""

from scores.projection.batch import BatchReport, batch_apply, pending_apply, pending_lag

__all__ = ["BatchReport", "batch_apply", "pending_apply", "pending_lag"]
