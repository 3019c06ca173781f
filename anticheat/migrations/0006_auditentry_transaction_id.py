import django.db.models.expressions
from django.db import migrations, models


def _txid():
    return django.db.models.expressions.Func(function="txid_current", output_field=models.BigIntegerField())


class Migration(migrations.Migration):
    """The writing transaction's id on each audit entry (AuditEntry.xact). Added without a
    default first, so entries written before it stay NULL instead of all sharing this
    migration's transaction id (which would link them with each other)."""

    dependencies = [("anticheat", "0005_held_after_the_fact_counts_from")]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="xact",
            field=models.BigIntegerField(db_index=True, editable=False, null=True),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="xact",
            field=models.BigIntegerField(db_default=_txid(), db_index=True, editable=False, null=True),
        ),
    ]
