"""The request side of ingest: decide what a submission is, and make it durable in one statement.

A submission (one match, or a batch of up to 1000) costs, on the usual path:

    BEGIN
    the append statement: upsert the players (ON CONFLICT DO NOTHING), insert the matches
        (ON CONFLICT (game, match_id) DO NOTHING), insert the results of the new ones, queue them
        for the projector (scores_pending); return what was new, what was
        stored before, the players' ids and their current all-time values
    the synchronous anti-cheat rules on the new matches (anticheat/ registers them): one Redis
        round trip for the rate counters; rejects are deleted again, holds marked, both audited
    COMMIT                                   synchronous_commit stays on: a 2xx is on disk
    NOTIFY the projector                     its own transaction, after the commit (see _wake)

Values, boards, live pushes and the after-the-fact checks follow in the projector
(scores/projection/), in batches. Nothing here touches scores_playervalue or Redis directly.

- Idempotency is the unique constraint on (game, match_id): the insert decides, never a prior
  read. A match stored before is a duplicate (same canonical body: 200) or a conflict (409); a
  match repeated inside one batch is judged against its first copy.
- The statement takes the game's ingest lock shared and stamps received_at after taking it, so
  a window's cutoff divides matches exactly (scores/locks.py, scores/cutoffs.py).

The package: submit.py (the transaction and the decisions), append.py (the one statement),
gather.py (group commit: the local append service single submissions are handed to),
checks.py (the rules anticheat/ registers), refusals.py (per-result refusals competitions/
registers), regions.py (regional claims), matches.py (what a
match is, and how it is refused).
"""

from scores.ingest.checks import NewMatches, SubmissionChecks, Verdict, submission_checks_register
from scores.ingest.gather import match_submit_gathered
from scores.ingest.matches import InvalidMatch, MatchConflict, MatchIn, MatchOutcome, ResultIn, RuleRejected
from scores.ingest.refusals import ResultRefusals, result_refusals_register
from scores.ingest.submit import match_submit, matches_submit

__all__ = [
    "InvalidMatch",
    "MatchConflict",
    "MatchIn",
    "MatchOutcome",
    "NewMatches",
    "ResultIn",
    "ResultRefusals",
    "RuleRejected",
    "SubmissionChecks",
    "Verdict",
    "match_submit",
    "match_submit_gathered",
    "matches_submit",
    "result_refusals_register",
    "submission_checks_register",
]
