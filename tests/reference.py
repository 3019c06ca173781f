"""A plain-Python reference model of ingest and ordering (contract sections 1, 4 and 6).

It knows nothing of encodings, Redis or SQL: it keeps each player's value per board and
window and orders by value, then the second the value was reached, then player id bytes.

Modes: best (the best result), total (the sum), latest (the most recent result: latest
ended_at, then match_id bytes, then the last of a match's results; it was reached then). A
total whose results may subtract (min_score < 0) adds them up in that same order, each step
clamped at min_total; it was reached at the latest result that moved it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class RefBoard:
    slug: str
    order: str  # desc | asc
    mode: str  # best | total | latest
    min_score: int
    max_score: int
    min_total: int = 0  # total boards whose results may subtract (min_score < 0): the floor


@dataclass(frozen=True)
class RefSeason:
    slug: str
    starts_at: datetime
    ends_at: datetime


@dataclass
class RefValue:
    value: int
    reached_at: datetime  # whole seconds count for ordering
    latest: tuple = ()  # latest boards: (ended_at, match_id bytes, position in the match) of the result


@dataclass
class Reference:
    boards: dict[str, RefBoard]
    tz: str
    seasons: list[RefSeason]
    matches: dict[str, str] = field(default_factory=dict)  # match_id -> canonical body
    values: dict[tuple[str, str, str], RefValue] = field(default_factory=dict)
    parts: dict[tuple[str, str, str], list[tuple[tuple, int]]] = field(default_factory=dict)  # signed totals

    def windows(self, ended_at: datetime) -> list[str]:
        day = ended_at.astimezone(ZoneInfo(self.tz)).date()
        iso = day.isocalendar()
        out = ["all", f"daily:{day}", f"weekly:{iso.year}-W{iso.week:02d}", f"monthly:{day:%Y-%m}"]
        out += [f"season:{s.slug}" for s in self.seasons if s.starts_at <= ended_at < s.ends_at]
        return out

    def submit(self, match: dict) -> int:
        """Apply a match; return the HTTP status the contract promises."""
        canonical = json.dumps(match, sort_keys=True)
        # an invalid body is refused as such, even under a known match_id
        for r in match["results"]:
            board = self.boards.get(r["board"])
            if board is None or not board.min_score <= r["score"] <= board.max_score:
                return 400
        if match["match_id"] in self.matches:
            return 200 if self.matches[match["match_id"]] == canonical else 409
        self.matches[match["match_id"]] = canonical
        ended_at = datetime.fromisoformat(match["ended_at"])
        for i, r in enumerate(match["results"]):
            board = self.boards[r["board"]]
            for window in self.windows(ended_at):
                recency = (ended_at, match["match_id"].encode(), i)
                self._apply(board, (board.slug, window, r["player"]), r["score"], ended_at, recency)
        return 201

    def _apply(self, board: RefBoard, key: tuple[str, str, str], score: int, at: datetime, recency: tuple = ()) -> None:
        current = self.values.get(key)
        if board.mode == "total" and board.min_score < 0:
            parts = sorted([*self.parts.get(key, []), (recency, score)])
            self.parts[key] = parts
            total, moved = 0, None
            for (at_k, _, _), score_k in parts:
                step = max(board.min_total, total + score_k)
                if step != total:
                    moved = at_k
                total = step
            self.values[key] = RefValue(total, moved or parts[0][0][0], parts[-1][0])
        elif board.mode == "latest":
            if current is None or recency > current.latest:
                self.values[key] = RefValue(score, at, recency)
        elif current is None:
            self.values[key] = RefValue(score, at)
        elif board.mode == "total":
            # reached when the last part that added something arrived; adding 0 changes nothing
            if score > 0:
                current.reached_at = max(current.reached_at, at) if current.value > 0 else at
            elif current.value == 0:
                current.reached_at = min(current.reached_at, at)
            current.value += score
        else:
            better = score > current.value if board.order == "desc" else score < current.value
            same_earlier = score == current.value and int(at.timestamp()) < int(current.reached_at.timestamp())
            if better or same_earlier:
                self.values[key] = RefValue(score, at)

    def order(self, board_slug: str, window: str) -> list[str]:
        board = self.boards[board_slug]
        sign = -1 if board.order == "desc" else 1
        rows = [(p, v) for (b, w, p), v in self.values.items() if b == board_slug and w == window]
        rows.sort(key=lambda pv: (sign * pv[1].value, int(pv[1].reached_at.timestamp()), pv[0].encode()))
        return [p for p, _ in rows]

    def windows_with_values(self) -> set[tuple[str, str]]:
        return {(b, w) for b, w, _ in self.values}

    # --- reads (contract sections 5 and 6) ---------------------------------------------

    def ranks(self, board_slug: str, window: str, shared: bool) -> list[tuple[int, str, int]]:
        """(displayed rank, player, value) in board order."""
        out: list[tuple[int, str, int]] = []
        for i, player in enumerate(self.order(board_slug, window)):
            value = self.values[(board_slug, window, player)].value
            rank = out[-1][0] if shared and out and out[-1][2] == value else i + 1
            out.append((rank, player, value))
        return out

    def standing(self, board_slug: str, window: str, player: str, around: int, shared: bool) -> dict:
        ranks = self.ranks(board_slug, window, shared)
        players = [p for _, p, _ in ranks]
        if player not in players:
            return {"rank": None, "score": None, "total": len(ranks), "percentile": None, "around": []}
        i = players.index(player)
        rank, _, value = ranks[i]
        board = self.boards[board_slug]
        better = sum(1 for _, _, v in ranks if (v > value if board.order == "desc" else v < value))
        percentile = int((len(ranks) - better) * 10000 / len(ranks)) / 100
        return {
            "rank": rank,
            "score": value,
            "total": len(ranks),
            "percentile": percentile,
            "around": ranks[max(0, i - around) : i + around + 1],
        }

    def friends_board(self, board_slug: str, window: str, player: str, friends: set[str], shared: bool) -> list:
        """(rank among friends, board rank, player, value)."""
        ranks = self.ranks(board_slug, window, shared)
        mine = [(r, p, v) for r, p, v in ranks if p == player or p in friends]
        out = []
        for i, (board_rank, p, v) in enumerate(mine):
            rank = out[-1][0] if shared and out and out[-1][3] == v else i + 1
            out.append((rank, board_rank, p, v))
        return out
