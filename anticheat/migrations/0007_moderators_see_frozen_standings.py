"""Moderators also see frozen standings (seasons: versions, who moved, why) and why a window
waits to close: a void after a freeze writes a new version, and the moderator who voided
checks it. Read-only: view permissions only."""

import importlib

from django.db import migrations

ADDED = [("seasons", "view_windowfreeze"), ("seasons", "view_windowclose")]


def grant(apps, schema_editor):
    importlib.import_module("anticheat.migrations.0002_moderators_group").permissions_ensure(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="moderators")
    group.permissions.add(*[Permission.objects.get(content_type__app_label=a, codename=c) for a, c in ADDED])


def revoke(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for group in Group.objects.filter(name="moderators"):
        group.permissions.remove(*Permission.objects.filter(content_type__app_label="seasons", codename__in=[c for _, c in ADDED]))


class Migration(migrations.Migration):
    dependencies = [
        ("anticheat", "0006_auditentry_transaction_id"),
        ("seasons", "0004_windowfreeze_transaction_id"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
