# A match held after the fact had counted since it arrived: its counts_from is its received_at,
# so approving it changes nothing in windows frozen meanwhile (scores.Match.counts_from).
# Matches held on arrival keep NULL: their approval stamps when they begin to count.

from django.db import migrations

MARK = """
UPDATE scores_match m SET counts_from = m.received_at
WHERE m.counts_from IS NULL AND EXISTS (
    SELECT 1 FROM anticheat_auditentry a
    WHERE a.match_id = m.id AND a.action = 'hold' AND a.details ? 'after_the_fact'
)
"""


class Migration(migrations.Migration):
    dependencies = [
        ("anticheat", "0004_audit_erase_player"),
        ("scores", "0012_projector_partitioned_results"),
    ]

    operations = [migrations.RunSQL(MARK, migrations.RunSQL.noop)]
