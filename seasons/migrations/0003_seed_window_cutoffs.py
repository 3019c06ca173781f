# Windows frozen before cutoffs existed (scores.WindowCutoff) stopped taking results at their
# first freeze: the rule the moderation recompute used until then (received before the first
# frozen_at) becomes their cutoff, so nothing that counted changes.

from django.db import migrations

SEED = """
INSERT INTO scores_windowcutoff (board_id, "window", cut_at)
SELECT board_id, "window", min(frozen_at) FROM seasons_windowfreeze GROUP BY board_id, "window"
ON CONFLICT (board_id, "window") DO NOTHING
"""


class Migration(migrations.Migration):
    dependencies = [
        ("seasons", "0002_protect_scored_rows"),
        ("scores", "0012_projector_partitioned_results"),
    ]

    operations = [migrations.RunSQL(SEED, migrations.RunSQL.noop)]
