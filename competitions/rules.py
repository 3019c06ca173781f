"""A tournament's per-result refusals (docs/api.md §12.1), which ingest asks inside a submission's
transaction (scores/ingest/refusals.py; registered in CompetitionsConfig.ready()): outside the
tournament's time (`tournament_closed`), a player who has not joined when joining is required
(`not_in_tournament`), beyond max_attempts in the period (`no_attempts_left`)."""

from __future__ import annotations

from competitions.selectors import entries_joined
from competitions.services import attempts_take
from competitions.tournaments import tournament_of
from scores.ingest import InvalidMatch, MatchIn
from scores.ingest.refusals import Refused
from scores.selectors import GameConfig


class TournamentRefusals:
    def refuse(self, *, config: GameConfig, matches: dict[int, MatchIn], player_ids: dict[str, int]) -> Refused:
        tournaments = {slug: (b, t) for slug, b in config.boards.items() if (t := tournament_of(b)) is not None}
        if not tournaments:
            return {}
        refused: Refused = {}
        inside = []  # (request index, result index, board, tournament, player pk, ended_at)
        for i in sorted(matches):
            match = matches[i]
            for k, r in enumerate(match.results):
                if r.board not in tournaments:
                    continue
                board, t = tournaments[r.board]
                if not t.starts_at <= match.ended_at < t.ends_at:
                    refused.setdefault(i, {})[k] = InvalidMatch(
                        f"results[{k}]: tournament {board.slug!r} runs from {t.starts_at.isoformat()} to "
                        f"{t.ends_at.isoformat()}; this match ended at {match.ended_at.isoformat()}",
                        code="tournament_closed",
                    )
                    continue
                inside.append((i, k, board, t, player_ids[r.player], match.ended_at))
        joined = entries_joined((b.id, pk) for _, _, b, t, pk, _ in inside if t.join_required)
        counted = []
        for item in inside:
            i, k, board, t, pk, ended_at = item
            if t.join_required and (board.id, pk) not in joined:
                refused.setdefault(i, {})[k] = InvalidMatch(
                    f"results[{k}]: player {matches[i].results[k].player!r} has not joined tournament {board.slug!r}",
                    code="not_in_tournament",
                )
            elif t.max_attempts:
                counted.append((item, (board.id, pk, t.period(board, ended_at))))
        granted = attempts_take([(key, item[3].max_attempts) for item, key in counted])
        for (i, k, board, t, _, _), key in counted:  # earlier results in the request count first
            if granted.get(key, 0) > 0:
                granted[key] -= 1
                continue
            refused.setdefault(i, {})[k] = InvalidMatch(
                f"results[{k}]: player {matches[i].results[k].player!r} has no attempts left in tournament "
                f"{board.slug!r} ({t.max_attempts} per {t.period_kind if t.period_kind != 'all' else 'tournament'})",
                code="no_attempts_left",
            )
        return refused
