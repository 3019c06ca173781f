"""A background batcher: `add(match)` returns at once; a thread sends what is queued as one
batch request when `max_size` matches wait or the oldest has waited `max_delay` seconds.

It never drops a match it took: a batch that gets no answer (or 429/503 past the client's
retries) goes back to the front of the queue and is sent again, with the same match_ids, so the
service counts each once. `close()` (also on `with` exit, at interpreter exit, and on SIGTERM
when `handle_signals`) stops taking matches and sends everything queued before returning, for up
to `close_timeout` seconds; what could still not be sent then is in `unsent`, and logged."""

from __future__ import annotations

import atexit
import collections
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from leaderboard_client._core import BATCH_LIMIT
from leaderboard_client.errors import ApiError, LeaderboardError
from leaderboard_client.types import Match, Submitted

if TYPE_CHECKING:
    from leaderboard_client.client import Client

log = logging.getLogger("leaderboard_client.batcher")

# the batchers of this process, closed by the SIGTERM handler
_open: set[Batcher] = set()
_open_lock = threading.Lock()
_previous_sigterm: Any = None


class BatcherClosed(LeaderboardError):
    """add() after close()."""


class Batcher:
    def __init__(self, client: Client, *, max_size: int = 100, max_delay: float = 1.0,
                 on_result: Callable[[Match, Submitted], None] | None = None,
                 on_error: Callable[[list[Match], ApiError], None] | None = None,
                 close_timeout: float = 30.0, handle_signals: bool = True) -> None:  # fmt: skip
        """`on_result(match, submitted)` hears each match's answer (accepted, held, or rejected
        with its error). `on_error(matches, error)` hears a batch the service refused whole
        (a revoked key: 401/403): those matches are kept in `unsent`, never retried blindly."""
        if not 1 <= max_size <= BATCH_LIMIT:
            raise ValueError(f"max_size must be 1-{BATCH_LIMIT}")
        self.client = client
        self.max_size, self.max_delay, self.close_timeout = max_size, max_delay, close_timeout
        self.on_result, self.on_error = on_result, on_error
        self.unsent: list[Match] = []
        self.sent = 0  # matches answered (accepted, held or rejected)
        self._queue: collections.deque[tuple[float, Match]] = collections.deque()
        self._cond = threading.Condition()
        self._closing = False
        self._in_flight = 0
        self._deadline: float | None = None  # close(): give up sending after this
        # a daemon thread: the interpreter does not wait for it before running atexit, where
        # close() sends what is left
        self._thread = threading.Thread(target=self._run, name="leaderboard-batcher", daemon=True)
        self._thread.start()
        atexit.register(self.close)
        with _open_lock:
            _open.add(self)
        if handle_signals:
            _install_sigterm()

    # --- the caller's side ------------------------------------------------------------------

    def add(self, match: Match) -> None:
        with self._cond:
            if self._closing:
                raise BatcherClosed("the batcher is closed")
            self._queue.append((time.monotonic(), match))
            # the first match starts the max_delay clock; max_size matches go at once
            if len(self._queue) == 1 or len(self._queue) >= self.max_size:
                self._cond.notify_all()

    @property
    def pending(self) -> int:
        """Matches taken and not yet answered."""
        with self._cond:
            return len(self._queue) + self._in_flight

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything added so far is answered (True), or `timeout` passes (False)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._cond.notify_all()
            while self._queue or self._in_flight:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 0.5)
                self._cond.notify_all()
        return True

    def close(self) -> None:
        """Take no more matches; send every queued one (up to close_timeout) and stop."""
        with self._cond:
            if not self._closing:
                self._closing = True
                self._deadline = time.monotonic() + self.close_timeout
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(self.close_timeout + self.client.retry.max_delay + 5)
        with _open_lock:
            _open.discard(self)
        atexit.unregister(self.close)
        with self._cond:
            if self._queue:
                self.unsent += [m for _, m in self._queue]
                self._queue.clear()
        if self.unsent:
            log.error("leaderboard batcher closed with %d matches unsent (in Batcher.unsent)", len(self.unsent))

    def __enter__(self) -> Batcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the thread -------------------------------------------------------------------------

    def _take(self) -> list[Match] | None:
        """The next batch to send, waiting for one; None when closed and empty (or past the
        close deadline)."""
        with self._cond:
            while True:
                now = time.monotonic()
                if self._closing and (not self._queue or (self._deadline is not None and now > self._deadline)):
                    return None
                if self._queue and (
                    self._closing or len(self._queue) >= self.max_size or now - self._queue[0][0] >= self.max_delay
                ):
                    n = min(len(self._queue), self.max_size if not self._closing else BATCH_LIMIT)
                    batch = [self._queue.popleft()[1] for _ in range(n)]
                    self._in_flight = n
                    return batch
                wait = self.max_delay - (now - self._queue[0][0]) if self._queue else None
                self._cond.wait(wait)

    def _run(self) -> None:
        failures = 0
        while (batch := self._take()) is not None:
            try:
                answers = self.client.submit_batch(batch)
            except ApiError as exc:
                if exc.status in self.client.retry.statuses or exc.status >= 500:
                    failures = self._requeue(batch, failures)
                    continue
                self._refused(batch, exc)  # the whole request refused: retrying the same cannot help
                continue
            except LeaderboardError:  # no answer after the client's own retries
                failures = self._requeue(batch, failures)
                continue
            failures = 0
            for match, submitted in zip(batch, answers, strict=True):
                if self.on_result is not None:
                    try:
                        self.on_result(match, submitted)
                    except Exception:  # a caller's callback must not stop the sending
                        log.exception("on_result raised")
            with self._cond:
                self.sent += len(batch)
                self._in_flight = 0
                self._cond.notify_all()

    def _requeue(self, batch: list[Match], failures: int) -> int:
        failures += 1
        now = time.monotonic()
        with self._cond:
            self._queue.extendleft((now, m) for m in reversed(batch))  # back in front, in order
            self._in_flight = 0
            self._cond.notify_all()
            delay = min(self.client.retry.max_delay, self.client.retry.delay(failures, None) + 0.05)
            if self._deadline is not None:
                delay = min(delay, max(0.0, self._deadline - now))
            self._cond.wait(delay)
        log.warning("leaderboard batcher: %d matches not sent yet, retrying (%d)", len(batch), failures)
        return failures

    def _refused(self, batch: list[Match], exc: ApiError) -> None:
        log.error("leaderboard batcher: the service refused a batch of %d: %s", len(batch), exc)
        with self._cond:
            self.unsent += batch
            self._in_flight = 0
            self._cond.notify_all()
        if self.on_error is not None:
            self.on_error(batch, exc)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    with _open_lock:
        batchers = list(_open)
    for b in batchers:
        b.close()
    previous = _previous_sigterm
    if callable(previous):
        previous(signum, frame)
    elif previous != signal.SIG_IGN:
        raise SystemExit(128 + signum)


def _install_sigterm() -> None:
    """SIGTERM (a container's stop, kill -TERM) sends what the batchers hold, then does what it
    did before (the previous handler, or exit 143). Only the main thread may set handlers."""
    global _previous_sigterm
    if threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is _on_sigterm:
        return
    _previous_sigterm = current
    signal.signal(signal.SIGTERM, _on_sigterm)
