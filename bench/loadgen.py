"""An HTTP/1.1 load generator on raw asyncio streams (no third-party client), closed or open loop.

Closed loop (`closed_loop`): N connections each send a request, wait for its response, and send
the next at once, so the offered load adapts to the server's speed and latency is what a caller
actually waits; once the server saturates, that latency is mostly queueing (N / throughput).
Open loop (`open_loop`): requests are scheduled at a fixed arrival rate whatever the server
does, and latency runs from the *scheduled* send time, so a server (or a load generator) that
falls behind shows it in the latency instead of quietly sending less (coordinated omission).
Connections are kept alive; when the server closes one the next request opens a new one, and
that connect is part of its latency.

Requests are signed (docs/api.md §3.1) by the game servers' own signer, leaderboard_client.sign
(clients/python/, docs/clients.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from leaderboard_client.signing import sign

if TYPE_CHECKING:
    from bench.environment import ServerKey


def signed_headers(key: ServerKey, method: str, path: str, body: bytes = b"") -> list[tuple[str, str]]:
    """A request's X-Key-Id and X-Signature, signed with a server key."""
    return [("X-Key-Id", key.key_id), ("X-Signature", sign(key.secret, method, path, body))]


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when installed (it comes with uvicorn[standard]): a faster load generator."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


@dataclass
class Request:
    method: str
    path: str
    body: bytes
    context: Any = None  # what the caller needs to judge the response (say, the match ids sent)
    headers: list[tuple[str, str]] = field(default_factory=list)  # beyond Host, Content-Type and Content-Length
    tag: str = ""  # a kind of request in a mixed workload: latencies are also kept per tag


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes


class HttpError(Exception):
    """The server broke the protocol or the connection."""


class HttpConnection:
    """One keep-alive HTTP/1.1 connection, reopened when the server closes it."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.connects = 0

    async def close(self) -> None:
        writer, self.reader, self.writer = self.writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def request(self, req: Request) -> Response:
        reused = self.writer is not None
        try:
            return await self._exchange(req)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            await self.close()
            # A kept-alive connection the server had closed while idle: retry once on a new one
            # (harmless for match submissions even if it was processed: match_id is idempotent).
            if reused and not (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                return await self._exchange(req)
            raise

    async def _exchange(self, req: Request) -> Response:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            self.connects += 1
        assert self.reader is not None
        head = [
            f"{req.method} {req.path} HTTP/1.1",
            f"Host: {self.host}:{self.port}",
            "Content-Type: application/json",
            f"Content-Length: {len(req.body)}",
            *(f"{name}: {value}" for name, value in req.headers),
        ]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + req.body)
        await self.writer.drain()
        return await self._read_response()

    async def _read_response(self) -> Response:
        assert self.reader is not None
        raw_head = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        try:
            version, status_text = lines[0].split(" ", 2)[:2]
            status = int(status_text)
        except ValueError:
            raise HttpError(f"malformed status line {lines[0]!r}") from None
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await self._read_chunked()
        elif "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        else:
            body = await self.reader.read()  # delimited by the server closing the connection
            headers["connection"] = "close"
        connection = headers.get("connection", "").lower()
        if connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive"):
            await self.close()
        return Response(status, body)

    async def _read_chunked(self) -> bytes:
        assert self.reader is not None
        parts = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await self.reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)


@dataclass
class LoadResult:
    """What a closed-loop run measured. Throughput and latency cover the measured window only;
    status counts cover every request (warm-up included), so no error goes unseen."""

    measured_seconds: float
    latencies: list[float] = field(default_factory=list)  # seconds, requests completed in the window
    statuses: Counter[str] = field(default_factory=Counter)  # "201", "500", "timeout", "ConnectionResetError"...
    sent: int = 0
    connects: int = 0
    latencies_by_tag: dict[str, list[float]] = field(default_factory=dict)  # requests with a tag
    max_send_lag: float = 0.0  # open loop: how far behind its schedule the generator sent a request

    @property
    def completed(self) -> int:
        return len(self.latencies)

    def record(self, req: Request, outcome: str, latency: float, measured: bool) -> None:
        self.statuses[outcome] += 1
        if measured:
            self.latencies.append(latency)
            if req.tag:
                self.latencies_by_tag.setdefault(req.tag, []).append(latency)


class WindowMonitor(Protocol):
    """Watches the measured window: start() at its start, tick() every TICK_SECONDS, stop() at its end.
    Calls run on the event loop, so they must be quick."""

    def start(self) -> None: ...
    def tick(self) -> None: ...
    def stop(self) -> None: ...


TICK_SECONDS = 0.5

# Called for every request: its response (None on a transport error or timeout) and whether it
# completed inside the measured window.
Handler = Callable[[Request, Response | None, bool], None]


async def _watch_window(
    monitor: WindowMonitor | None, measure_start: float, measure_end: float, clock: Callable[[], float]
) -> None:
    if monitor is None:
        return
    await asyncio.sleep(max(0.0, measure_start - clock()))
    monitor.start()
    while (left := measure_end - clock()) > 0:
        await asyncio.sleep(min(TICK_SECONDS, left))
        if clock() < measure_end:
            monitor.tick()
    monitor.stop()


async def send(conn: HttpConnection, req: Request, timeout: float) -> tuple[Response | None, str]:
    """One request on `conn`: the response (None on failure) and its outcome for the status counts."""
    try:
        response = await asyncio.wait_for(conn.request(req), timeout)
        return response, str(response.status)
    except TimeoutError:
        await conn.close()
        return None, "timeout"
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, HttpError) as exc:
        await conn.close()
        return None, exc.__class__.__name__


@dataclass(frozen=True)
class Load:
    """What either loop sends and how: the server, the window (warmup unmeasured, then seconds
    measured), the next request, what to do with each answer, how long one may take, and who
    watches the window."""

    host: str
    port: int
    warmup: float
    seconds: float
    make_request: Callable[[], Request]
    on_response: Handler
    timeout: float = 120.0
    monitor: WindowMonitor | None = None


async def closed_loop(load: Load, *, concurrency: int, stagger: float = 0.0) -> LoadResult:
    """Run `concurrency` connections for the warmup + the measured seconds, then let the requests in flight finish.

    `stagger`: seconds between the starts of two connections. Opened all at once, keep-alive
    connections to a server whose worker processes share one listening socket (uvicorn
    --workers) may all be accepted by the first worker to wake, leaving the others idle for
    the whole run; started a little apart, they spread as a stream of real clients would."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    measure_start = start + load.warmup
    measure_end = measure_start + load.seconds
    result = LoadResult(measured_seconds=load.seconds)

    async def worker(index: int) -> None:
        await asyncio.sleep(index * stagger)
        conn = HttpConnection(load.host, load.port)
        try:
            while loop.time() < measure_end:
                req = load.make_request()
                result.sent += 1
                t0 = time.perf_counter()  # loop.time() is uvloop's millisecond clock: too coarse here
                response, outcome = await send(conn, req, load.timeout)
                t1 = time.perf_counter()
                measured = measure_start <= loop.time() <= measure_end
                result.record(req, outcome, t1 - t0, measured)
                load.on_response(req, response, measured)
        finally:
            result.connects += conn.connects
            await conn.close()

    await asyncio.gather(
        _watch_window(load.monitor, measure_start, measure_end, loop.time), *(worker(i) for i in range(concurrency))
    )
    return result


async def open_loop(load: Load, *, rate: float, max_connections: int = 512) -> LoadResult:
    """Send `rate` requests a second, evenly spaced, for the warmup + the measured seconds, whatever the server does.

    A request goes out on an idle keep-alive connection, or a new one while fewer than
    `max_connections` are open; past that it waits for one, and the wait counts. Latency is from
    the request's scheduled send time to the end of its response. Measured: the requests
    scheduled inside the window (they may complete after it)."""
    # One clock for the schedule and the latencies: perf_counter (uvloop's loop.time() counts
    # whole milliseconds). Sleeps still wake on the loop's millisecond ticks, so a request may
    # leave up to ~1 ms after its scheduled time; that wait is part of its latency, as it should be.
    clock = time.perf_counter
    start = clock() + 0.05
    measure_start = start + load.warmup
    measure_end = measure_start + load.seconds
    result = LoadResult(measured_seconds=load.seconds)
    idle: list[HttpConnection] = []
    opened: list[HttpConnection] = []
    slots = asyncio.Semaphore(max_connections)
    in_flight: set[asyncio.Task[None]] = set()

    async def one(scheduled: float, req: Request) -> None:
        async with slots:
            if idle:
                conn = idle.pop()
            else:
                conn = HttpConnection(load.host, load.port)
                opened.append(conn)
            response, outcome = await send(conn, req, load.timeout)
            idle.append(conn)  # closed ones reconnect on their next request
        finished = time.perf_counter()
        measured = measure_start <= scheduled < measure_end
        result.record(req, outcome, finished - scheduled, measured)
        load.on_response(req, response, measured)

    async def schedule() -> None:
        period = 1.0 / rate
        i = 0
        while (scheduled := start + i * period) < measure_end:
            delay = scheduled - clock()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                result.max_send_lag = max(result.max_send_lag, -delay)
            req = load.make_request()
            result.sent += 1
            task = asyncio.create_task(one(scheduled, req))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            i += 1
        while in_flight:
            await asyncio.gather(*list(in_flight))

    try:
        await asyncio.gather(_watch_window(load.monitor, measure_start, measure_end, clock), schedule())
    finally:
        result.connects = sum(c.connects for c in opened)
        for conn in opened:
            await conn.close()
    return result
