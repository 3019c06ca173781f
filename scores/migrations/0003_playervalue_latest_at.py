from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scores", "0002_friendship")]

    operations = [
        migrations.AddField(model_name="playervalue", name="latest_at", field=models.DateTimeField(null=True)),
        # existing values: the best result's time is also its latest that counted
        migrations.RunSQL("UPDATE scores_playervalue SET latest_at = reached_at", migrations.RunSQL.noop),
        migrations.AlterField(model_name="playervalue", name="latest_at", field=models.DateTimeField()),
    ]
