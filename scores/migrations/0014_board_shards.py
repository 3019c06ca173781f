from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scores", "0013_board_format")]

    operations = [
        migrations.AddField(
            model_name="board",
            name="shards",
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="board",
            name="exact_rank_limit",
            field=models.PositiveIntegerField(default=10000),
        ),
    ]
