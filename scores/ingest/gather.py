"""Group commit for single submissions: the local append service (docs/architecture.md, "Group
commit for single submissions").

A single submission pays a transaction, an append statement and a commit (a WAL flush) of its
own, and those are most of its Postgres cost. A sync web worker cannot share them with another
request, so the web processes hand their single matches over a unix socket to one process on the
same machine, `manage.py append_service`, which stores what arrived together with one
matches_submit: one statement, one transaction, one commit for the group, then answers each
request with its own outcome.

The web side (match_submit_gathered), in the request's thread:

- admission control first, per request (scores/admission.py): a 503 is answered before
  anything is handed over;
- the match goes to the service on this thread's kept connection, and the request waits for its
  outcome (WEB_APPEND_TIMEOUT_MS);
- the service is the only store of a single submission while WEB_APPEND_SERVICE is on (`make
  run`'s supervisor restarts it when it exits). When it is not running, the connection breaks
  or the wait times out, the answer is a 503 `overloaded` with Retry-After (docs/api.md §4.5):
  the game server sends the same body again, and the unique (game, match_id) answers it as
  stored, once, whether or not the service committed it before it went (docs/architecture.md
  "Idempotency"). When the service could not store the match (Postgres unreachable), the
  request answers as a request of its own would: 503 `database_unavailable`.

The service side (AppendService): one thread per web connection reads matches into one queue;
one writer takes the first, gathers what else arrives within WEB_APPEND_GATHER_MS or until
WEB_APPEND_GATHER_MAX wait, and stores them:

- per (game, server key) one matches_submit (the rules and the audit log name the key), with
  each match admitted already; each match stands alone in it, so an invalid, rejected or
  conflicting match gets its own answer and the others are stored;
- a match whose match_id is already in the group waits for the next group: it is then judged
  against what the first stored, exactly as it would be had it come alone after it (in one
  batch a repeat is judged against its sibling instead: docs/api.md §4.2);
- an unexpected error storing a group is retried match by match, each in its own transaction,
  and a match that fails alone is answered with the kind of failure (Postgres unreachable, or
  another error: logged here with its traceback, a 500 for the request).

A group is one transaction: a kill -9 of the service before its commit leaves none of it, after
its commit all of it, each match whole, and the requests waiting on it are answered 503
(tests/scores/test_gather_process.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from leaderboard_project.errors import ApiError
from scores.admission import Overloaded, admission_check
from scores.ingest.matches import MatchIn, MatchOutcome, ResultIn
from scores.ingest.submit import matches_submit
from scores.models import Game, ServerKey
from scores.selectors import cached_game

log = logging.getLogger(__name__)

_HEADER = struct.Struct("!I")  # each message: its length, then that many bytes of JSON
_MAX_MESSAGE = 1 << 20  # a single match is a few KB at most (docs/api.md §4.1)


# --- the wire ---------------------------------------------------------------------------------


def _match_encode(match: MatchIn) -> list[Any]:
    return [
        match.match_id,
        match.ended_at.isoformat(),
        [[r.player, r.board, r.score, r.display_name, r.metadata, r.region, r.subscores] for r in match.results],
    ]


def _match_decode(raw: list[Any]) -> MatchIn:
    match_id, ended_at, results = raw
    return MatchIn(match_id, datetime.fromisoformat(ended_at), tuple(ResultIn(*r) for r in results))


def _outcome_encode(outcome: MatchOutcome) -> dict[str, Any]:
    error = outcome.error
    return {
        "id": outcome.match_id,
        "status": outcome.status,
        "duplicate": outcome.duplicate,
        "missed": outcome.missed_windows,
        "error": None if error is None else [error.code, error.message, error.status_code],
    }


def _outcome_decode(raw: dict[str, Any]) -> MatchOutcome:
    error = raw["error"]
    return MatchOutcome(
        raw["id"],
        raw["status"],
        duplicate=raw["duplicate"],
        error=None if error is None else ApiError(error[1], code=error[0], status_code=error[2]),
        missed_windows=raw["missed"],
    )


def _send(sock: socket.socket, body: dict[str, Any]) -> None:
    payload = orjson.dumps(body)
    sock.sendall(_HEADER.pack(len(payload)) + payload)


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(sock: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if size > _MAX_MESSAGE:
        raise ConnectionError(f"a message of {size} bytes")
    return orjson.loads(_recv_exactly(sock, size))


def socket_path() -> Path:
    return Path(settings.WEB_APPEND_SOCKET)


# --- the web side -----------------------------------------------------------------------------

_local = threading.local()  # each request thread's kept connection to the service


def match_submit_gathered(*, game: Game, server_key: ServerKey | None, match: MatchIn) -> MatchOutcome:
    """Store one match: through the append service when WEB_APPEND_SERVICE is on, else in this
    request. Raises as match_submit does (Overloaded, InvalidMatch, MatchConflict...), and
    Overloaded when the service does not answer."""
    if settings.WEB_APPEND_SERVICE:
        admission_check(matches=1)
        outcome = _hand_over(game, server_key, match)
    else:
        outcome = matches_submit(game=game, server_key=server_key, matches=[match])[0]
    if outcome.error is not None:
        raise outcome.error
    return outcome


class StoreAbsent(Overloaded):
    """The append service did not answer: restarting, gone or stuck. Nothing is known to be
    stored; the same body sent again is stored once (the unique match id decides)."""

    def __init__(self) -> None:
        super().__init__("the result store is restarting: send the same body again after Retry-After", retry_after=1)


def _connection() -> socket.socket:
    """This thread's kept connection to the service; raises StoreAbsent when none listens."""
    sock: socket.socket | None = getattr(_local, "sock", None)
    path = str(socket_path())
    if sock is not None:
        if _local.path == path:
            return sock
        _disconnect()  # the setting changed (a test's own service): this one leads to another
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(settings.WEB_APPEND_TIMEOUT_MS / 1000)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise StoreAbsent from None
    _local.sock, _local.path = sock, path
    return sock


def _disconnect() -> None:
    sock = getattr(_local, "sock", None)
    _local.sock = None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.close()


def _hand_over(game: Game, server_key: ServerKey | None, match: MatchIn) -> MatchOutcome:
    """The service's outcome for the match. Raises StoreAbsent when it does not answer, and
    OperationalError when it could not reach Postgres."""
    message = {"game": game.slug, "key": server_key.pk if server_key else None, "match": _match_encode(match)}
    sock = _connection()
    try:
        _send(sock, message)
    except OSError:
        # this thread's kept connection was to a service that has since restarted: nothing
        # reached anyone, so the match goes once more, on a new connection
        _disconnect()
        sock = _connection()
        try:
            _send(sock, message)
        except OSError:
            _disconnect()
            raise StoreAbsent from None
    try:
        reply = _recv(sock)
    except (OSError, ValueError):
        # gone or too slow after it had the match: what it did with the match the unique
        # (game, match_id) decides when the client sends it again; a late answer must not be
        # read as the next request's, so the connection goes
        _disconnect()
        raise StoreAbsent from None
    failed = reply.get("failed")
    if failed == "database":
        raise OperationalError("the append service could not reach Postgres")  # 503 database_unavailable
    if failed is not None:
        raise RuntimeError("the append service failed to store the match (its log has the traceback)")
    return _outcome_decode(reply)


# --- the service ------------------------------------------------------------------------------


@dataclass
class _Waiting:
    sock: socket.socket
    game: str
    key: int | None
    match: MatchIn


@dataclass
class GroupStats:
    groups: int = 0
    matches: int = 0
    largest: int = 0
    sizes: dict[int, int] = field(default_factory=dict)  # group size -> groups of that size
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=256))  # the last groups' sizes, in order


class AppendService:
    """Listens on `path`; `serve()` runs the writer in the calling thread until `stop()`."""

    def __init__(self, path: Path, *, gather_ms: float, gather_max: int) -> None:
        self.path = path
        self.gather_s = max(0.0, gather_ms / 1000)
        self.gather_max = max(1, gather_max)
        self.stats = GroupStats()
        self._queue: queue.Queue[_Waiting | None] = queue.Queue()
        self._deferred: deque[_Waiting] = deque()  # repeats of a match_id of the group before
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._keys: dict[int, ServerKey] = {}

    # the socket

    def listen(self) -> None:
        """Bind the socket (a file left by a service that died is replaced; a live one is not)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(self.path))
            except OSError:
                self.path.unlink()
            else:
                raise RuntimeError(f"an append service already listens on {self.path}")
            finally:
                probe.close()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)  # the web processes run as this user; nobody else hands matches over
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old)
        listener.listen(256)
        self._listener = listener
        threading.Thread(target=self._accept, name="append-accept", daemon=True).start()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._read, args=(sock,), name="append-read", daemon=True).start()

    def _read(self, sock: socket.socket) -> None:
        """One web thread's connection: it has one match in flight at a time."""
        try:
            while True:
                raw = _recv(sock)
                self._queue.put(_Waiting(sock, raw["game"], raw["key"], _match_decode(raw["match"])))
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                sock.close()

    def stop(self) -> None:
        self._stopping.set()
        self._queue.put(None)
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    # the writer

    def serve(self) -> None:
        while not self._stopping.is_set():
            group = self._gather()
            if group:
                self.store(group)
        # stopping (SIGTERM: a restart, a deploy): what is queued already is stored and answered,
        # so that a stop under load refuses nothing it had; a match handed over after this
        # sees the socket close (a 503 its sender retries)
        rest = [*self._deferred, *(item for item in self._queue_drain() if item is not None)]
        self._deferred.clear()
        while rest:
            self.store(rest[: self.gather_max])
            rest = [*self._deferred, *rest[self.gather_max :]]
            self._deferred.clear()

    def _queue_drain(self) -> list[_Waiting | None]:
        items: list[_Waiting | None] = []
        with contextlib.suppress(queue.Empty):
            while True:
                items.append(self._queue.get_nowait())
        return items

    def _gather(self) -> list[_Waiting]:
        group = list(self._deferred)
        self._deferred.clear()
        if group:
            deadline = time.monotonic()  # repeats held back from the group before waited already
        else:
            first = self._queue.get()
            if first is None:
                return []
            group.append(first)
            deadline = time.monotonic() + self.gather_s
        while len(group) < self.gather_max:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                self._stopping.set()
                break
            group.append(item)
        return group

    def store(self, group: list[_Waiting]) -> None:
        """Store a gathered group and answer each of its requests."""
        seen: set[tuple[str, str]] = set()
        targets: dict[tuple[str, int | None], list[_Waiting]] = {}
        for item in group:
            ident = (item.game, item.match.match_id)
            if ident in seen:
                self._deferred.append(item)
                continue
            seen.add(ident)
            targets.setdefault((item.game, item.key), []).append(item)
        stats = self.stats  # counted before the answers go: a caller that has its answer sees its group
        size = len(group) - len(self._deferred)
        stats.groups += 1
        stats.matches += size
        stats.largest = max(stats.largest, size)
        stats.sizes[size] = stats.sizes.get(size, 0) + 1
        stats.recent.append(size)
        for (game_slug, key_pk), members in targets.items():
            self._store_one(game_slug, key_pk, members)

    def _store_one(self, game_slug: str, key_pk: int | None, members: list[_Waiting]) -> None:
        try:
            game, key = self._target(game_slug, key_pk)
            outcomes = matches_submit(game=game, server_key=key, matches=[m.match for m in members], admitted=True)
        except Exception as failure:
            log.exception("storing a group of %d matches failed; storing them one by one", len(members))
            _connection_reset()
            if len(members) > 1:
                for member in members:
                    self._store_one(game_slug, key_pk, [member])
                return
            self._answer(members[0], {"failed": "database" if _unreachable(failure) else "error"})
            return
        for member, outcome in zip(members, outcomes, strict=True):
            self._answer(member, _outcome_encode(outcome))

    def _target(self, game_slug: str, key_pk: int | None) -> tuple[Game, ServerKey | None]:
        game = cached_game(game_slug, stale_ok=False)[0]
        if game is None:
            raise LookupError(f"unknown game {game_slug!r}")
        if key_pk is None:
            return game, None
        key = self._keys.get(key_pk)
        if key is None:
            # the web process checked the signature, the scope and the game before handing over
            key = self._keys[key_pk] = ServerKey.objects.select_related("game").get(pk=key_pk)
        return game, key

    @staticmethod
    def _answer(member: _Waiting, body: dict[str, Any]) -> None:
        # an error: the request gave up waiting and was answered 503 (the unique id decides a retry)
        with contextlib.suppress(OSError):
            _send(member.sock, body)


def _unreachable(failure: Exception) -> bool:
    return isinstance(failure, OperationalError | InterfaceError)


def _connection_reset() -> None:
    """After an error, the next group starts on a usable connection."""
    with contextlib.suppress(Exception):
        connection.close()
