"""The load generator's two loops against a tiny HTTP server that takes SERVICE_SECONDS per request
on one connection at a time: the open loop keeps its schedule whatever the server does and
counts the queueing (latency from the scheduled send time); the closed loop waits.

Only lower bounds on latency are asserted: a busy machine makes everything slower, never faster."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bench import loadgen

SERVICE_SECONDS = 0.02


async def _slow_server() -> tuple[asyncio.Server, int]:
    lock = asyncio.Lock()  # one request at a time, like a single busy worker

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                async with lock:
                    await asyncio.sleep(SERVICE_SECONDS)
                body = b'{"ok":true}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _request() -> loadgen.Request:
    return loadgen.Request("GET", "/x", b"", headers=[], tag="x")


def _against_slow_server(
    loop: Callable[..., Awaitable[loadgen.LoadResult]], seconds: float, **loop_args: Any
) -> loadgen.LoadResult:
    """`loop` (open_loop or closed_loop, with `loop_args`) for `seconds` against _slow_server():
    no warm-up, every answer accepted, so only the loop's own timing is under test."""

    async def main() -> loadgen.LoadResult:
        server, port = await _slow_server()
        async with server:
            load = loadgen.Load(
                host="127.0.0.1", port=port, warmup=0.0, seconds=seconds, make_request=_request,
                on_response=lambda *_: None,
            )  # fmt: skip
            return await loop(load, **loop_args)

    return asyncio.run(main())


def test_open_loop_keeps_its_schedule_and_counts_the_queue() -> None:
    result = _against_slow_server(loadgen.open_loop, 0.5, rate=200, max_connections=1)
    assert result.sent == 100  # 200/s for 0.5 s, although the server answers 50/s at most
    assert result.statuses == {"200": 100}
    assert result.completed == 100 and len(result.latencies_by_tag["x"]) == 100
    # The k-th request is scheduled at k x 5 ms but cannot finish before (k + 1) x 20 ms:
    # the last waited at least 100 x 20 - 99 x 5 ms = 1.5 s, from its scheduled time.
    assert max(result.latencies) >= 1.5 - 0.01
    assert sorted(result.latencies)[50] >= 0.5


def test_closed_loop_waits_for_each_answer() -> None:
    result = _against_slow_server(loadgen.closed_loop, 0.3, concurrency=1)
    assert 1 <= result.completed <= 0.3 / SERVICE_SECONDS + 1  # never more than the server can answer
    assert min(result.latencies) >= SERVICE_SECONDS - 0.002  # the server's time, no queue on top
    assert result.connects == 1  # kept alive
