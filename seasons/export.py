"""CSV of any board window: a frozen version's standings (the record rewards are paid from), or
the current values of a window not frozen yet, in the board order (docs/api.md §6). The admin and the signed
API route (GET /api/v1/games/{game}/boards/{board}/export) both stream it from here."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse

from leaderboard_project.replicas import in_this_context
from scores import encoding
from scores.selectors import BoardConfig, window_rows
from seasons.models import WindowFreeze
from seasons.selectors import FrozenPart, standings_rows

HEADER = ["game", "board", "window", "version", "rank", "position", "player", "display_name", "score", "reached_at"]
LIVE = "live"  # the version column of a window exported from its current values
# A spreadsheet runs a cell that begins with one of these as a formula (docs/api.md §10, the
# export): game servers choose player ids and display names, so a text cell starting so is
# written with a leading ' and opens as text. Numbers are written as they are.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def window_csv(board: BoardConfig, window: str, freeze: WindowFreeze | None) -> Iterator[str]:
    """The header, then one line per player; from `freeze` if given, else the current values."""
    version = str(freeze.version) if freeze is not None else LIVE
    rows = standings_rows(freeze) if freeze is not None else window_rows(board, window=window)
    return _csv(board, window, version, rows)


def part_rows(part: FrozenPart, *, chunk: int = 1000) -> Iterator[tuple]:
    """A frozen part's standings (a league group's) in order, as standings_rows() gives a version's."""
    offset = 0
    while offset < part.total:
        page = part.page(offset, chunk)
        if not page:
            return
        for s in page:
            yield s.position, s.rank, s.player.external_id, s.player.display_name, s.value, s.reached_at, s.encoded
        offset += len(page)


def text_cell(text: str) -> str:
    """A text cell a spreadsheet will show, never run."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv(board: BoardConfig, window: str, version: str, rows: Iterable[tuple]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    # a board with sub-scores: one column more per sub-score, in declared order (docs/api.md §2.3)
    subs = [sub.name for sub in board.subscores]
    writer.writerow(HEADER + [f"subscores.{name}" for name in subs])
    yield flush()
    for n, (position, rank, player, name, value, reached_at, encoded) in enumerate(rows, 1):
        line = [
            board.game_slug,
            board.slug,
            window,
            version,
            rank,
            position,
            text_cell(player),
            text_cell(name or ""),
            value,
            reached_at.isoformat(),
        ]
        if subs:
            decoded = encoding.decode_subscores(board, encoded)
            line += [decoded[s] for s in subs]
        writer.writerow(line)
        if n % 1000 == 0:
            yield flush()
    yield flush()


def csv_response(board: BoardConfig, window: str, freeze: WindowFreeze | None) -> StreamingHttpResponse:
    version = f"v{freeze.version}" if freeze is not None else LIVE
    name = f"{board.game_slug}-{board.slug}-{window.replace(':', '_')}-{version}.csv"
    return _streamed(window_csv(board, window, freeze), name, version)


def group_csv_response(board: BoardConfig, window: str, group: str, part: FrozenPart) -> StreamingHttpResponse:
    """A league group's frozen standings (docs/competitions.md, "Leagues"): the same columns,
    `version` the group's own."""
    name = f"{board.game_slug}-{board.slug}-{window.replace(':', '_')}-group{group}-v{part.version}.csv"
    return _streamed(_csv(board, window, str(part.version), part_rows(part)), name, f"v{part.version}")


def _streamed(csv_lines: Iterator[str], name: str, version: str) -> StreamingHttpResponse:
    # the rows are read while the answer streams, after the view returned: in the request's
    # routing context still (the replica, when the view may read it)
    lines = in_this_context(csv_lines)
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Standings-Version"] = version
    return response
