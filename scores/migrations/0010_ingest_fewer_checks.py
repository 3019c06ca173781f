"""Fewer writes per ingested result (docs/BENCHMARKS.md, "Decision history": batch ingest CPU).

- scores_match.game_id and scores_player.game_id lose their single-column indexes: the unique
  (game_id, match_id) and (game_id, external_id) indexes lead with game_id and serve the same
  lookups and cascades.
- scores_playervalue loses its foreign-key constraints (a value is derived from results;
  see PlayerValue's docstring): five deferred checks per result were a fifth of a batch's
  database time.

Only the index and constraint drops run (IF EXISTS, no table rewrite, no re-validation):
Django's own AlterField would drop and re-add the game foreign keys, re-checking every row.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scores", "0009_player_search_login_links"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="match",
                    name="game",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="matches",
                        to="scores.game",
                    ),
                ),
                migrations.AlterField(
                    model_name="player",
                    name="game",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="players",
                        to="scores.game",
                    ),
                ),
                migrations.AlterField(
                    model_name="playervalue",
                    name="board",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="values",
                        to="scores.board",
                    ),
                ),
                migrations.AlterField(
                    model_name="playervalue",
                    name="player",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="values",
                        to="scores.player",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    sql=[
                        'DROP INDEX IF EXISTS "scores_match_game_id_62ca4680"',
                        'DROP INDEX IF EXISTS "scores_player_game_id_7833a961"',
                        'ALTER TABLE "scores_playervalue" DROP CONSTRAINT IF EXISTS '
                        '"scores_playervalue_board_id_57e270df_fk_scores_board_id"',
                        'ALTER TABLE "scores_playervalue" DROP CONSTRAINT IF EXISTS '
                        '"scores_playervalue_player_id_fd733d21_fk_scores_player_id"',
                    ],
                    reverse_sql=[
                        'CREATE INDEX "scores_match_game_id_62ca4680" ON "scores_match" ("game_id")',
                        'CREATE INDEX "scores_player_game_id_7833a961" ON "scores_player" ("game_id")',
                        'ALTER TABLE "scores_playervalue" ADD CONSTRAINT '
                        '"scores_playervalue_board_id_57e270df_fk_scores_board_id" FOREIGN KEY ("board_id") '
                        'REFERENCES "scores_board" ("id") DEFERRABLE INITIALLY DEFERRED',
                        'ALTER TABLE "scores_playervalue" ADD CONSTRAINT '
                        '"scores_playervalue_player_id_fd733d21_fk_scores_player_id" FOREIGN KEY ("player_id") '
                        'REFERENCES "scores_player" ("id") DEFERRABLE INITIALLY DEFERRED',
                    ],
                ),
            ],
        ),
    ]
