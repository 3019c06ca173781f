"""submissionrate.game_id loses its single-column index: the unique (game_id, player) index leads with it."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("anticheat", "0002_moderators_group"),
        ("scores", "0010_ingest_fewer_checks"),
    ]

    operations = [
        migrations.AlterField(
            model_name="submissionrate",
            name="game",
            field=models.ForeignKey(
                db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="scores.game"
            ),
        ),
    ]
