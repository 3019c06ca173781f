"""CSV of any board window: a frozen version's standings (the record rewards are paid from), or
the current values of a window not frozen yet, in the contract's order. The admin and the signed
API route (GET /api/v1/games/{game}/boards/{board}/export) both stream it from here."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator

from django.http import StreamingHttpResponse

from leaderboard_project.replicas import in_this_context
from scores.selectors import BoardConfig, window_rows
from seasons.models import WindowFreeze
from seasons.selectors import standings_rows

HEADER = ["game", "board", "window", "version", "rank", "position", "player", "display_name", "score", "reached_at"]
LIVE = "live"  # the version column of a window exported from its current values


def window_csv(board: BoardConfig, window: str, freeze: WindowFreeze | None) -> Iterator[str]:
    """The header, then one line per player; from `freeze` if given, else the current values."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(HEADER)
    yield flush()
    version = str(freeze.version) if freeze is not None else LIVE
    rows = standings_rows(freeze) if freeze is not None else window_rows(board, window=window)
    for n, (position, rank, player, name, value, reached_at) in enumerate(rows, 1):
        writer.writerow(
            [board.game_slug, board.slug, window, version, rank, position, player, name, value, reached_at.isoformat()]
        )
        if n % 1000 == 0:
            yield flush()
    yield flush()


def csv_response(board: BoardConfig, window: str, freeze: WindowFreeze | None) -> StreamingHttpResponse:
    version = f"v{freeze.version}" if freeze is not None else LIVE
    name = f"{board.game_slug}-{board.slug}-{window.replace(':', '_')}-{version}.csv"
    # the rows are read while the answer streams, after the view returned: in the request's
    # routing context still (the replica, when the view may read it)
    lines = in_this_context(window_csv(board, window, freeze))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Standings-Version"] = version
    return response
