"""The background batcher: flushes by size, by time, on close, and when its process is stopped
with SIGTERM (a real `kill -TERM` of a real process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta

import leaderboard_client as lb
import pytest
from leaderboard_client import Client, Match, Result
from misbehaving import OVERLOADED, proxy

DEADLINE = 30.0


def _match(player: str, score: int = 1) -> Match:
    return Match.new([Result(player, "kills", score)], ended_at=datetime.now(UTC) - timedelta(seconds=5))


def _until(condition, what: str) -> None:
    end = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"{what} within {DEADLINE} s")
        time.sleep(0.02)  # polling with a deadline


def test_it_flushes_when_max_size_matches_wait(client: Client, uid: str, settled) -> None:
    answers: list[lb.Submitted] = []
    with client.batcher(
        max_size=5, max_delay=3600, handle_signals=False, on_result=lambda m, s: answers.append(s)
    ) as b:
        for _ in range(4):
            b.add(_match(f"{uid}-p"))
        assert b.pending == 4 and b.sent == 0  # an hour's delay: nothing goes before the fifth
        b.add(_match(f"{uid}-p"))
        _until(lambda: b.sent == 5, "five matches were not sent")
    assert [a.status for a in answers] == ["accepted"] * 5
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    assert client.player("kills", f"{uid}-p").score == 5


def test_it_flushes_the_oldest_after_max_delay(client: Client, uid: str, settled) -> None:
    with client.batcher(max_size=1000, max_delay=0.2, handle_signals=False) as b:
        b.add(_match(f"{uid}-p", 3))
        _until(lambda: b.sent == 1, "the match was not sent after max_delay")
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    assert client.player("kills", f"{uid}-p").score == 3


def test_close_sends_everything_and_then_refuses_more(client: Client, uid: str, settled) -> None:
    b = client.batcher(max_size=1000, max_delay=3600, handle_signals=False)
    for _ in range(7):
        b.add(_match(f"{uid}-p"))
    b.close()
    assert b.sent == 7 and b.unsent == [] and b.pending == 0
    with pytest.raises(lb.BatcherClosed):
        b.add(_match(f"{uid}-p"))
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    assert client.player("kills", f"{uid}-p").score == 7


def test_a_batch_refused_for_overload_is_sent_again_not_dropped(client: Client, url, game, creds, uid, settled):
    with proxy(url, [OVERLOADED, OVERLOADED]) as p:
        policy = lb.RetryPolicy(attempts=1)  # the client gives up at once: the batcher keeps them
        with Client(p.url, game, retry=policy, **creds) as through:
            b = through.batcher(max_size=3, max_delay=3600, handle_signals=False)
            for _ in range(3):
                b.add(_match(f"{uid}-p"))
            b.close()
    assert b.sent == 3 and b.unsent == []
    assert [s.action for s in p.seen] == [OVERLOADED, OVERLOADED, "forward"]
    settled()  # on the boards within docs/api.md §4.4's second of the 2xx
    assert client.player("kills", f"{uid}-p").score == 3


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from datetime import UTC, datetime, timedelta
    from leaderboard_client import Client, Match, Result

    url, game, key_id, secret, player = sys.argv[1:6]
    client = Client(url, game, key_id=key_id, secret=secret)
    batcher = client.batcher(max_size=1000, max_delay=3600)  # only a close sends them
    ended = datetime.now(UTC) - timedelta(seconds=5)
    for i in range(40):
        batcher.add(Match.new([Result(player, "kills", 1)], ended_at=ended))
    print("queued", batcher.pending, flush=True)
    while True:
        time.sleep(60)
    """
)


def test_kill_term_of_its_process_flushes_what_it_holds(client: Client, url, game, creds, uid, tmp_path, settled):
    script = tmp_path / "game_server.py"
    script.write_text(SCRIPT)
    player = f"{uid}-p"
    proc = subprocess.Popen(
        [sys.executable, str(script), url, game, creds["key_id"], creds["secret"], player],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == ["queued", "40"]
        settled()  # anything it had sent would be on the boards now (docs/api.md §4.4)
        with pytest.raises(lb.UnknownPlayer):  # nothing sent yet
            client.player("kills", player)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    settled()  # what it sent on its way out, on the boards within docs/api.md §4.4's second
    assert client.player("kills", player).score == 40
