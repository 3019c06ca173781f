from django.db import migrations, models

# Each group standing was cut from a version of the season's frozen standings (its freeze's
# season_freeze): that row's encoded score is the group standing's own.
BACKFILL = """
UPDATE competitions_leaguegroupstanding s SET encoded = fs.encoded
FROM competitions_leaguegroupfreeze f, seasons_standing fs
WHERE f.id = s.freeze_id AND fs.freeze_id = f.season_freeze_id AND fs.player_id = s.player_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("competitions", "0004_leaguegroupfreeze_leaguegroupstanding_and_more"),
        ("seasons", "0006_frozenstanding"),
    ]

    operations = [
        migrations.AddField(
            model_name="leaguegroupstanding",
            name="encoded",
            field=models.BigIntegerField(null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="leaguegroupstanding",
            name="encoded",
            field=models.BigIntegerField(),
        ),
    ]
