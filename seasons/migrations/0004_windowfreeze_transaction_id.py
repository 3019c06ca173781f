import django.db.models.expressions
from django.db import migrations, models


def _txid():
    return django.db.models.expressions.Func(function="txid_current", output_field=models.BigIntegerField())


class Migration(migrations.Migration):
    """The freezing transaction's id on each standings version (WindowFreeze.xact), NULL for
    versions frozen before it (see anticheat 0004)."""

    dependencies = [("seasons", "0003_seed_window_cutoffs")]

    operations = [
        migrations.AddField(
            model_name="windowfreeze",
            name="xact",
            field=models.BigIntegerField(db_index=True, editable=False, null=True),
        ),
        migrations.AlterField(
            model_name="windowfreeze",
            name="xact",
            field=models.BigIntegerField(db_default=_txid(), db_index=True, editable=False, null=True),
        ),
    ]
