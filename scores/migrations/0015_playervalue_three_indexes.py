"""scores_playervalue keeps three indexes instead of four: the unique index now leads with the
player, so it also serves reads by player and the separate player_id index goes. The new unique
index is built before the old one is dropped, so ON CONFLICT (board_id, "window", player_id)
always finds one."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scores", "0014_board_shards"),
    ]

    operations = [
        migrations.AddConstraint(
            model_name="playervalue",
            constraint=models.UniqueConstraint(
                fields=("player", "board", "window"), name="playervalue_player_board_window"
            ),
        ),
        migrations.RemoveConstraint(
            model_name="playervalue",
            name="playervalue_unique",
        ),
        migrations.AlterField(
            model_name="playervalue",
            name="player",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="values",
                to="scores.player",
            ),
        ),
    ]
