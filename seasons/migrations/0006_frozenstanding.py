"""The model of a frozen standing is FrozenStanding (there are other standings: a player's live
one, a void's preview). Nothing changes in the database: the table keeps its name."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("seasons", "0005_standings_partitioned")]

    operations = [
        migrations.AlterModelTable(name="standing", table="seasons_standing"),
        migrations.RenameModel(old_name="Standing", new_name="FrozenStanding"),
    ]
