"""scores_pending.partition is scores_pending.lane: the projector's lanes (scores/locks.py) are
not the day partitions of scores_result (scores/partitions.py). A column and an index renamed:
no row is rewritten, no index rebuilt."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scores", "0015_playervalue_three_indexes")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE scores_pending RENAME COLUMN partition TO lane;"
                    " ALTER INDEX pending_partition_id RENAME TO pending_lane_id",
                    "ALTER TABLE scores_pending RENAME COLUMN lane TO partition;"
                    " ALTER INDEX pending_lane_id RENAME TO pending_partition_id",
                ),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="pending", name="pending_partition_id"),
                migrations.RenameField(model_name="pending", old_name="partition", new_name="lane"),
                migrations.AddIndex(
                    model_name="pending", index=models.Index(fields=["lane", "id"], name="pending_lane_id")
                ),
            ],
        ),
    ]
