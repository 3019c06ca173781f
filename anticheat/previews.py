"""What a void will change, shown before it is applied, and a confirm that applies exactly that.

A preview runs the real void service (anticheat.services) inside a transaction that is then
rolled back, and reads every affected player's value and rank per board window from Postgres
before and after. Nothing it does survives: the rollback discards the writes and the
after-commit work (board rewrites, live pushes) that the service registered with on_commit.

    preview = void_preview(game=game, apply=lambda reason: services.matches_void(...))
    ... the moderator reads it, gives a reason, confirms with preview.token ...
    void_confirm(game=game, apply=..., reason=reason, token=token)

The confirm runs the same service for real, reads the same values, and commits only if the
voided matches and every affected value before and after are those the preview showed; else it
rolls back and raises PreviewOutdated carrying a fresh preview (a result arrived meanwhile).
Ranks of the affected players are shown as of the preview: other players' results may move
them by the time of the confirm, and are not what the moderator decides."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core import signing
from django.db import connection, transaction

from scores.models import Game, Match, Player, PlayerValue, Result
from scores.selectors import BoardConfig, durable_standings, game_config
from seasons.models import StandingChange, WindowFreeze

log = logging.getLogger(__name__)

Apply = Callable[[str], Sequence[int]]  # given a reason, void and return the voided match pks
Ref = tuple[int, str, int]  # board_id, window, player_id
SIGNING_SALT = "anticheat.void-preview"
PREVIEW_REASON = "(preview)"
# window kinds in the order a moderator reads them
_KIND_ORDER = {"all": 0, "season": 1, "monthly": 2, "weekly": 3, "daily": 4}


@dataclass(frozen=True)
class PreviewStanding:
    value: int | None  # None: no value in the window
    rank: int | None
    total: int  # ranked players in the window


@dataclass(frozen=True)
class ValueChange:
    board: str
    board_id: int
    window: str
    player_id: int
    player: str
    display_name: str
    before: PreviewStanding
    after: PreviewStanding

    @property
    def removed(self) -> bool:
        return self.before.value is not None and self.after.value is None

    @property
    def moved(self) -> int | None:
        """Places gained (positive) or lost; None when ranked on one side only."""
        if self.before.rank is None or self.after.rank is None:
            return None
        return self.before.rank - self.after.rank


@dataclass(frozen=True)
class MatchLine:
    pk: int
    match_id: str
    status: str
    ended_at: datetime
    server_key: str
    results: list[tuple[str, str, int]]  # (player, board slug, score)


@dataclass(frozen=True)
class PlayerLine:
    pk: int
    external_id: str
    display_name: str
    matches: int  # how many of the voided matches they played in


@dataclass(frozen=True)
class Refreeze:
    board: str
    window: str
    version: int  # the version the void writes
    moved: int  # players whose frozen rank or value changes


@dataclass(frozen=True)
class VoidPreview:
    matches: list[MatchLine]
    players: list[PlayerLine]
    changes: list[ValueChange]
    refreezes: list[Refreeze]
    token: str  # signed: the match pks and a digest of every affected value before and after

    @property
    def match_pks(self) -> list[int]:
        return [m.pk for m in self.matches]

    def changes_by_window(self) -> list[tuple[str, str, list[ValueChange]]]:
        grouped: dict[tuple[str, str], list[ValueChange]] = defaultdict(list)
        for c in self.changes:
            grouped[(c.board, c.window)].append(c)
        return [(board, window, rows) for (board, window), rows in grouped.items()]


class PreviewOutdated(Exception):
    """The boards changed between the preview and the confirm; nothing was applied."""

    def __init__(self, fresh: VoidPreview) -> None:
        super().__init__("the affected values changed since the preview")
        self.fresh = fresh


class _Rollback(Exception):
    pass


def void_preview(*, game: Game, apply: Apply, reason: str = "") -> VoidPreview:
    """Run `apply` twice, each time rolled back: once to learn which matches it voids, once to
    read the values and ranks after it; the values and ranks before are read in between."""
    reason = reason.strip() or PREVIEW_REASON
    pks: list[int] = []
    try:
        with transaction.atomic():
            pks.extend(sorted(apply(reason)))
            raise _Rollback
    except _Rollback:
        pass
    return _preview(game, apply, reason, pks)


def void_confirm(*, game: Game, apply: Apply, reason: str, token: str) -> list[int]:
    """Apply the void the preview `token` describes; returns the voided match pks. Raises
    PreviewOutdated (nothing applied) when it would change anything else, and
    signing.BadSignature for a token that is not a preview's."""
    if not reason.strip():
        raise ValueError("a reason is required")
    planned = signing.loads(token, salt=SIGNING_SALT)
    outdated = False
    with transaction.atomic():
        players, boards = _scope(planned["pks"])
        before = _values(players, boards)
        pks = sorted(apply(reason))
        after = _values(players, boards)
        if _plan(pks, before, after) != planned:
            outdated = True
            transaction.set_rollback(True)
    if outdated:
        raise PreviewOutdated(void_preview(game=game, apply=apply, reason=reason))
    return pks


def _preview(game: Game, apply: Apply, reason: str, pks: list[int]) -> VoidPreview:
    config = game_config(game)
    boards_by_id = {b.id: b for b in config.boards.values()}
    players, boards = _scope(pks)
    before = _values(players, boards)
    after_ranks: dict[Ref, PreviewStanding] = {}
    refreezes: list[Refreeze] = []
    windows: list[tuple[int, str]] = []
    try:
        with transaction.atomic():
            apply(reason)
            after = _values(players, boards)
            windows = _changed_windows(before, after)
            after_ranks = _standings(boards_by_id, windows, players)
            refreezes = _refreezes_here()
            raise _Rollback
    except _Rollback:
        pass
    before_ranks = _standings(boards_by_id, windows, players)
    log.info("void preview (rolled back): %d match(es), %d board window(s) change", len(pks), len(windows))
    return VoidPreview(
        matches=_match_lines(pks),
        players=_player_lines(pks),
        changes=_changes(boards_by_id, windows, players, before_ranks, after_ranks),
        refreezes=refreezes,
        token=_token(pks, before, after),
    )


def _scope(pks: Sequence[int]) -> tuple[list[int], list[int]]:
    """The players (opponents included) and boards of these matches' results."""
    rows = Result.objects.filter(match_id__in=pks).values_list("player_id", "board_id").distinct()
    return sorted({p for p, _ in rows}), sorted({b for _, b in rows})


def _values(players: list[int], boards: list[int]) -> dict[Ref, int]:
    """Every value these players hold on these boards, as encoded (value and tie-break)."""
    rows = PlayerValue.objects.filter(player_id__in=players, board_id__in=boards).values_list(
        "board_id", "window", "player_id", "encoded"
    )
    return {(b, w, p): e for b, w, p, e in rows}


def _changed_windows(before: dict[Ref, int], after: dict[Ref, int]) -> list[tuple[int, str]]:
    changed = {(b, w) for b, w, p in before.keys() | after.keys() if before.get((b, w, p)) != after.get((b, w, p))}
    return sorted(changed, key=lambda bw: (bw[0], _KIND_ORDER.get(bw[1].split(":")[0], 9), bw[1]))


def _token(pks: Sequence[int], before: dict[Ref, int], after: dict[Ref, int]) -> str:
    return signing.dumps(_plan(pks, before, after), salt=SIGNING_SALT)


def _plan(pks: Sequence[int], before: dict[Ref, int], after: dict[Ref, int]) -> dict:
    """What a confirm must reproduce: the voided matches, and each affected value before and
    after (as encoded: value and tie-break) in every board window the void changes."""
    windows = set(_changed_windows(before, after))
    rows = sorted(
        [b, w, p, before.get((b, w, p)), after.get((b, w, p))]
        for b, w, p in before.keys() | after.keys()
        if (b, w) in windows
    )
    digest = hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()
    return {"pks": sorted(pks), "digest": digest}


def _standings(
    boards: dict[int, BoardConfig], windows: list[tuple[int, str]], players: list[int]
) -> dict[Ref, PreviewStanding]:
    """The players' value and rank per window, in the board order (docs/api.md §6), from Postgres."""
    out: dict[Ref, PreviewStanding] = {}
    for board_id, window in windows:
        board = boards[board_id]
        in_window = PlayerValue.objects.filter(board_id=board_id, window=window)
        total = in_window.count()
        values = dict(in_window.filter(player_id__in=players).values_list("player_id", "value"))
        found, _ = durable_standings(board, window=window, pks=players)
        for pk, (_, position, better) in found.items():
            rank = better + 1 if board.rank_display == "shared" else position + 1
            out[(board_id, window, pk)] = PreviewStanding(values[pk], rank, total)
        for pk in players:
            out.setdefault((board_id, window, pk), PreviewStanding(None, None, total))
    return out


def _changes(
    boards: dict[int, BoardConfig],
    windows: list[tuple[int, str]],
    players: list[int],
    before: dict[Ref, PreviewStanding],
    after: dict[Ref, PreviewStanding],
) -> list[ValueChange]:
    names = dict(Player.objects.filter(pk__in=players).values_list("pk", "external_id"))
    display = dict(Player.objects.filter(pk__in=players).values_list("pk", "display_name"))
    out = []
    for board_id, window in windows:
        for pk in sorted(players, key=lambda p: names[p]):
            b, a = before[(board_id, window, pk)], after[(board_id, window, pk)]
            if b.value is None and a.value is None:
                continue  # not on this window at all
            out.append(ValueChange(boards[board_id].slug, board_id, window, pk, names[pk], display[pk], b, a))
    return out


def _refreezes_here() -> list[Refreeze]:
    """Standings versions written by the current transaction (the void's re-freezes)."""
    with connection.cursor() as cur:
        cur.execute("SELECT txid_current()")
        xact = cur.fetchone()[0]
    return [
        Refreeze(str(f.board), f.window, f.version, StandingChange.objects.filter(freeze=f).count())
        for f in WindowFreeze.objects.filter(xact=xact).select_related("board__game").order_by("board_id", "window")
    ]


def _match_lines(pks: list[int]) -> list[MatchLine]:
    results: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    for r in Result.objects.filter(match_id__in=pks).select_related("player", "board").order_by("match_id", "id"):
        results[r.match_id].append((str(r.player), r.board.slug, r.score))
    return [
        MatchLine(m.pk, m.match_id, m.status, m.ended_at, str(m.server_key or "-"), results[m.pk])
        for m in Match.objects.filter(pk__in=pks).select_related("server_key").order_by("ended_at", "pk")
    ]


def _player_lines(pks: list[int]) -> list[PlayerLine]:
    counts: dict[int, set[int]] = defaultdict(set)
    for match_pk, player_pk in Result.objects.filter(match_id__in=pks).values_list("match_id", "player_id"):
        counts[player_pk].add(match_pk)
    return [
        PlayerLine(p.pk, p.external_id, p.display_name, len(counts[p.pk]))
        for p in Player.objects.filter(pk__in=counts).order_by("external_id")
    ]
