"""Board modes that may fall (docs/encoding.md, "Values that fall"): mode "latest" (six
characters), a total's floor (min_total), and the match a value's latest result came from
(latest_match, the tie-break between results of one ended_at). Nullable columns: no row is
rewritten."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scores", "0017_game_allowed_origins")]

    operations = [
        migrations.AlterField(
            model_name="board",
            name="mode",
            field=models.CharField(
                choices=[
                    ("best", "Best result per window"),
                    ("total", "Sum of results per window"),
                    ("latest", "Most recent result per window"),
                ],
                default="best",
                max_length=6,
            ),
        ),
        migrations.AddField(
            model_name="board",
            name="min_total",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="playervalue",
            name="latest_match",
            field=models.CharField(blank=True, max_length=128, null=True),
        ),
    ]
