"""Judging a scenario's responses one by one, the same way in every benchmark: reads (2xx
counted; a degraded answer, served from Postgres because Redis failed, noted) and submissions
(what the server acknowledged, batch items it rejected, by error code)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench import loadgen
from bench.environment import log
from bench.ingest import Scenario
from bench.report import latency_ms

ERROR_SAMPLES = 5  # non-2xx bodies kept for the report


@dataclass
class Tally:
    """`submissions`: request tag -> how that kind of submission is sent; any other request is a read."""

    submissions: dict[str, Scenario] = field(default_factory=dict)
    measured_ok: int = 0  # 2xx responses completed in the measured window, reads and submissions
    degraded: int = 0  # reads answered 2xx from Postgres because Redis failed: not what is measured
    acked: list[str] = field(default_factory=list)  # every match id answered 2xx (or accepted in a batch)
    rejected: Counter[str] = field(default_factory=Counter)  # batch items answered "rejected", by error code
    measured_results: int = 0  # acknowledged in the measured window: one result per match
    bad_bodies: list[str] = field(default_factory=list)  # a few non-2xx bodies

    def judge(self, req: loadgen.Request, response: loadgen.Response | None, measured: bool) -> None:
        if response is None:
            return
        if not 200 <= response.status < 300:
            if len(self.bad_bodies) < ERROR_SAMPLES:
                self.bad_bodies.append(f"{response.status} {req.path}: {response.body[:300].decode(errors='replace')}")
            return
        if measured:
            self.measured_ok += 1
        submission = self.submissions.get(req.tag)
        if submission is None:
            if b'"degraded"' in response.body:
                self.degraded += 1
            return
        if submission.batch:
            acked = []
            for item in json.loads(response.body)["results"]:
                if item["status"] == "rejected":
                    self.rejected[item.get("error", {}).get("code", "unknown")] += 1
                else:
                    acked.append(item["match_id"])
        else:
            acked = req.context
        self.acked.extend(acked)
        if measured:
            self.measured_results += len(acked)


def load_figures(result: loadgen.LoadResult, tally: Tally) -> dict[str, Any]:
    """What every HTTP scenario reports of its load: requests, throughput and latency in the
    measured window, and every error (non-2xx, batch items rejected, degraded reads)."""
    seconds = result.measured_seconds
    errors = {k: v for k, v in result.statuses.items() if not k.startswith("2")}
    return {
        "measured_seconds": seconds,
        "requests_completed": result.completed,
        "requests_ok": tally.measured_ok,
        "requests_per_s": tally.measured_ok / seconds,
        "latency_ms": latency_ms(result.latencies),
        "statuses": dict(result.statuses),
        "errors": sum(errors.values()) + sum(tally.rejected.values()) + tally.degraded,
        "errors_by_status": errors,
        "error_samples": tally.bad_bodies,
        "requests_sent": result.sent,
        "connections_opened": result.connects,
    }


def log_errors(figures: dict[str, Any], tally: Tally, log_tail: Callable[[], str]) -> None:
    """A scenario's errors in the log, with samples (and the server's log tail on a 5xx)."""
    errors = figures["errors_by_status"]
    if not figures["errors"]:
        return
    log(f"  errors by status {errors}, rejected by code {dict(tally.rejected)}, degraded {tally.degraded}")
    for sample in tally.bad_bodies:
        log(f"  {sample}")
    if any(k.startswith("5") for k in errors):
        log(f"  server log tail:\n{log_tail()}")
