"""A plain-Python reference model of ingest and ordering (docs/api.md §1, §4, §6).

It knows nothing of encodings, Redis or SQL: it keeps each player's value per board and
window and orders by value, then the second the value was reached, then player id bytes.

Modes: best (the best result), total (the sum), latest (the most recent result: latest
ended_at, then match_id bytes, then the last of a match's results; it was reached then). A
total whose results may subtract (min_score < 0) adds them up in that same order, each step
clamped at min_total; it was reached at the latest result that moved it.

Sub-scores (best and latest boards): a result may carry {"name": value} of the board's declared
sub-scores (missing: the worst value). The order is score, then each sub-score in its own
order, then the second, then player id; a best board keeps the best whole tuple."""

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
    subscores: tuple[tuple[str, str, int, int], ...] = ()  # (name, order, min, max), declared order

    def subs_of(self, result: dict) -> tuple[int, ...]:
        """The result's sub-scores in declared order, a missing one as its worst value."""
        given = result.get("subscores") or {}
        return tuple(given.get(n, lo if o == "desc" else hi) for n, o, lo, hi in self.subscores)

    def rank_key(self, value: int, subs: tuple[int, ...]) -> tuple[int, ...]:
        """Smaller is better: the score, then each sub-score, each in its own order."""
        sign = -1 if self.order == "desc" else 1
        return (
            sign * value,
            *((-v if o == "desc" else v) for v, (_, o, _, _) in zip(subs, self.subscores, strict=True)),
        )

    def subs_problem(self, result: dict) -> bool:
        """Whether the result's sub-scores are not what the board declares."""
        given = result.get("subscores")
        if given is None:
            return False
        bounds = {n: (lo, hi) for n, _, lo, hi in self.subscores}
        if type(given) is not dict:
            return True
        return any(
            n not in bounds or type(v) is not int or not bounds[n][0] <= v <= bounds[n][1] for n, v in given.items()
        )


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
    subs: tuple[int, ...] = ()  # the sub-scores of the result the value is (boards that declare them)


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
        """Apply a match; return the HTTP status docs/api.md §4 promises."""
        canonical = json.dumps(match, sort_keys=True)
        # an invalid body is refused as such, even under a known match_id
        for r in match["results"]:
            board = self.boards.get(r["board"])
            if board is None or not board.min_score <= r["score"] <= board.max_score or board.subs_problem(r):
                return 400
        if match["match_id"] in self.matches:
            return 200 if self.matches[match["match_id"]] == canonical else 409
        self.matches[match["match_id"]] = canonical
        ended_at = datetime.fromisoformat(match["ended_at"])
        for i, r in enumerate(match["results"]):
            board = self.boards[r["board"]]
            for window in self.windows(ended_at):
                recency = (ended_at, match["match_id"].encode(), i)
                subs = board.subs_of(r)
                self._apply(board, (board.slug, window, r["player"]), r["score"], ended_at, recency, subs)
        return 201

    def _apply(
        self,
        board: RefBoard,
        key: tuple[str, str, str],
        score: int,
        at: datetime,
        recency: tuple = (),
        subs: tuple[int, ...] = (),
    ) -> None:
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
                self.values[key] = RefValue(score, at, recency, subs)
        elif current is None:
            self.values[key] = RefValue(score, at, subs=subs)
        elif board.mode == "total":
            # reached when the last part that added something arrived; adding 0 changes nothing
            if score > 0:
                current.reached_at = max(current.reached_at, at) if current.value > 0 else at
            elif current.value == 0:
                current.reached_at = min(current.reached_at, at)
            current.value += score
        else:
            # the whole tuple (score, sub-scores) decides, never a mix of two results
            mine, theirs = board.rank_key(score, subs), board.rank_key(current.value, current.subs)
            # the same tuple reached earlier, to the microsecond (docs/encoding.md, "Time resolution")
            same_earlier = mine == theirs and at < current.reached_at
            if mine < theirs or same_earlier:
                self.values[key] = RefValue(score, at, subs=subs)

    def order(self, board_slug: str, window: str) -> list[str]:
        board = self.boards[board_slug]
        rows = [(p, v) for (b, w, p), v in self.values.items() if b == board_slug and w == window]
        rows.sort(
            key=lambda pv: (
                board.rank_key(pv[1].value, pv[1].subs),
                int(pv[1].reached_at.timestamp()),
                pv[0].encode(),
            )
        )
        return [p for p, _ in rows]

    def subscores_of(self, board_slug: str, window: str, player: str) -> dict[str, int]:
        """The sub-scores an entry carries ({} on a board without any)."""
        board = self.boards[board_slug]
        value = self.values[(board_slug, window, player)]
        return {n: v for (n, _, _, _), v in zip(board.subscores, value.subs, strict=True)}

    def windows_with_values(self) -> set[tuple[str, str]]:
        return {(b, w) for b, w, _ in self.values}

    # --- reads (docs/api.md §5, §6) ---------------------------------------------

    def ranks(self, board_slug: str, window: str, shared: bool) -> list[tuple[int, str, int]]:
        """(displayed rank, player, value) in board order."""
        out: list[tuple[int, str, int]] = []
        previous: tuple | None = None
        for i, player in enumerate(self.order(board_slug, window)):
            v = self.values[(board_slug, window, player)]
            tie = (v.value, v.subs)  # shared ranks: the same score and the same sub-scores
            rank = out[-1][0] if shared and out and previous == tie else i + 1
            out.append((rank, player, v.value))
            previous = tie
        return out

    def standing(self, board_slug: str, window: str, player: str, around: int, shared: bool) -> dict:
        ranks = self.ranks(board_slug, window, shared)
        players = [p for _, p, _ in ranks]
        if player not in players:
            return {"rank": None, "score": None, "total": len(ranks), "percentile": None, "around": []}
        i = players.index(player)
        rank, _, value = ranks[i]
        board = self.boards[board_slug]
        vals = {p: self.values[(board_slug, window, p)] for p in players}
        mine = board.rank_key(vals[player].value, vals[player].subs)
        # strictly ahead: a better score, then better sub-scores
        better = sum(1 for v in vals.values() if board.rank_key(v.value, v.subs) < mine)
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


@dataclass
class RefTournament:
    """Joins to a tournament (docs/competitions.md, "Counting exactly under concurrency"), one at
    a time: what each join answers given the ones before it. `max_size` 0 is unlimited; an
    ended tournament joins nobody."""

    max_size: int
    ended: bool = False
    joined: list[str] = field(default_factory=list)  # in the order admitted

    def join(self, player: str) -> tuple[int, dict]:
        """(HTTP status, body) as docs/api.md §12.1 promises: 200 {"joined", "size"} (again for a
        player already in), 409 with the error code."""
        if self.ended:
            return 409, {"code": "tournament_ended"}
        if player not in self.joined:
            if self.max_size and len(self.joined) >= self.max_size:
                return 409, {"code": "tournament_full"}
            self.joined.append(player)
        return 200, {"joined": True, "size": len(self.joined)}


@dataclass(frozen=True)
class RefLeague:
    """Promotion and relegation (docs/competitions.md, "Leagues") from one group's frozen order:
    the top `promote` up a tier, the bottom `relegate` down (promotion first where they would
    overlap), never past the top or below the lowest of `tiers` tiers (0 the lowest)."""

    tiers: int
    promote: int
    relegate: int

    def next_tiers(self, order: list[str], tiers: dict[str, int]) -> dict[str, int]:
        out = {}
        for i, player in enumerate(order):
            tier = tiers[player]
            if i < self.promote:
                tier = min(tier + 1, self.tiers - 1)
            elif i >= len(order) - self.relegate:
                tier = max(tier - 1, 0)
            out[player] = tier
        return out
