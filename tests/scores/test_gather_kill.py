"""`kill -9` of a web process with a gathered group in flight (scores/ingest/gather.py), on the
real web tier (scripts/web.py: nginx, granian with several threads): every acknowledged result
is stored once, and nothing unacknowledged is half-stored (a match is there with all its
results, or not at all)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
from pathlib import Path

import pytest
from leaderboard_client.signing import sign

from scores.models import Match, Result
from scripts import web
from tests.polling import until
from tests.test_web import serving

GROUP = 8
GATHER_MS = 3000  # long: the group is surely gathered, unanswered, when the worker dies


def _granian_pids(session: int) -> list[int]:
    """The granian processes of the web tier's session (its HTTP workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getsid(int(entry.name)) != session:
                continue
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ProcessLookupError):
            continue
        if any(part.endswith(b"granian") for part in cmdline[:2]):
            found.append(int(entry.name))
    return found


def _post(port: int, key_id: str, secret: str, body: dict, sent: list[str]) -> int | None:
    """The status of the answer, None if none came; `sent` lists the bodies written out."""
    path = "/api/v1/games/chess/matches"
    raw = json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {
            "Content-Type": "application/json",
            "X-Key-Id": key_id,
            "X-Signature": sign(secret, "POST", path, raw),
        }
        conn.request("POST", path, body=raw, headers=headers)
        sent.append(body["match_id"])
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def _send_group(port: int, server, matches: list[dict], answers: dict, sent: list[str]) -> list[threading.Thread]:
    def send(m: dict) -> None:
        answers[m["match_id"]] = _post(port, server.key_id, server.secret, m, sent)

    threads = [threading.Thread(target=send, args=(m,)) for m in matches]
    for t in threads:
        t.start()
    return threads


def _match(i: int, round_: int) -> dict:
    return {
        "match_id": f"r{round_}-m{i}",
        "ended_at": "2026-11-29T18:59:58Z",
        "results": [
            {"player": f"p{i}", "board": "rating", "score": 10 + i},
            {"player": f"q{i}", "board": "points", "score": 1 + i},
        ],
    }


def test_kill_9_with_a_gathered_group_in_flight_loses_no_acknowledged_result(server, game) -> None:
    if web.find_nginx(install=False) is None:
        pytest.skip("nginx is not installed here")
    env = {"WEB_THREADS": str(GROUP), "INGEST_GATHER_MS": str(GATHER_MS), "INGEST_GATHER_MAX": "64"}
    answers: dict[str, int | None] = {}
    with serving("nginx", "granian", **env) as port:
        session = next(
            os.getsid(pid) for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if _safe_is_web(pid, port)
        )
        # a first group, answered: the path works
        sent: list[str] = []
        first = [_match(i, 0) for i in range(GROUP)]
        for t in _send_group(port, server, first, answers, sent):
            t.join()
        assert all(answers[m["match_id"]] == 201 for m in first), answers
        # gathered: one statement stamped them all
        assert Match.objects.filter(match_id__startswith="r0-").values("received_at").distinct().count() == 1
        # a second group, killed while it is gathered (the window is seconds long)
        second = [_match(i, 1) for i in range(GROUP)]
        threads = _send_group(port, server, second, answers, sent)
        until(lambda: len(sent) == 2 * GROUP, "the second group sent", every=0.01)
        pids = _granian_pids(session)
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        for t in threads:
            t.join()
    assert all(answers[m["match_id"]] not in (200, 201) for m in second), answers  # killed before it was stored
    acked = [mid for mid, code in answers.items() if code in (200, 201)]
    assert len(acked) >= GROUP  # the first group at least
    stored = dict(Match.objects.filter(game=game).values_list("match_id", "pk"))
    for mid in acked:
        assert mid in stored, mid
    results = {pk: 0 for pk in stored.values()}
    for match_pk in Result.objects.filter(match_id__in=list(stored.values())).values_list("match_id", flat=True):
        results[match_pk] += 1
    assert all(n == 2 for n in results.values()), results  # whole matches only, each once


def _safe_is_web(pid: int, port: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"scripts/web.py" in cmdline and str(port).encode() in cmdline
