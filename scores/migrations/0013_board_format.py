from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scores", "0012_projector_partitioned_results")]

    operations = [
        migrations.AddField(
            model_name="board",
            name="format",
            field=models.CharField(default="integer", max_length=16),
        ),
    ]
