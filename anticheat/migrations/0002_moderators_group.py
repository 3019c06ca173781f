"""The `moderators` group, with exactly what moderating needs: see matches, results and
players, work the review queue (view + moderate_match), read the audit log. Revoking server
keys (scores.change_serverkey) is granted separately, per user."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

PERMISSIONS = [
    ("scores", "view_match"),
    ("scores", "view_result"),
    ("scores", "view_player"),
    ("anticheat", "view_reviewmatch"),
    ("anticheat", "moderate_match"),
    ("anticheat", "view_auditentry"),
]


def permissions_ensure(apps):
    # Permissions are normally created after all migrations ran; make sure they exist now.
    for app_config in apps.get_app_configs():
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = original


def create_group(apps, schema_editor):
    permissions_ensure(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name="moderators")
    perms = [Permission.objects.get(content_type__app_label=app, codename=code) for app, code in PERMISSIONS]
    group.permissions.set(perms)


def drop_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="moderators").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("anticheat", "0001_initial"),
        ("scores", "0007_board_anticheat_boardoutbox_rewrite"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_group, drop_group)]
