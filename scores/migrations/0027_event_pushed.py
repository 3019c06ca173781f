"""The events feed's chunks that hold an event [[webhooks]] may subscribe to from the feed
(scores.events.PUSHED: the low-volume match decisions and league moves): flagged, with a
partial index, so competitions/' webhook pull reads those few chunks and never the many that
hold only results and value changes."""

from django.db import migrations, models

FORWARD = """
ALTER TABLE scores_eventdraft ADD COLUMN pushed boolean NOT NULL DEFAULT false;
ALTER TABLE scores_event ADD COLUMN pushed boolean NOT NULL DEFAULT false;
CREATE INDEX scores_event_pushed ON scores_event (game_id, pos) WHERE pushed;
CREATE OR REPLACE FUNCTION scores_event_publish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the first draft's trigger moves them all (a transaction sees no other's drafts: they
    -- never commit); the others find nothing left
    PERFORM pg_advisory_xact_lock(7305, 0);
    WITH moved AS (DELETE FROM scores_eventdraft RETURNING *)
    INSERT INTO scores_event (pos, game_id, at, count, events, pushed)
    SELECT nextval('scores_event_pos'), d.game_id, clock_timestamp(), d.count, d.events, d.pushed
    FROM (SELECT * FROM moved ORDER BY id) d;
    RETURN NULL;
END $$;
"""

BACKWARD = """
CREATE OR REPLACE FUNCTION scores_event_publish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7305, 0);
    WITH moved AS (DELETE FROM scores_eventdraft RETURNING *)
    INSERT INTO scores_event (pos, game_id, at, count, events)
    SELECT nextval('scores_event_pos'), d.game_id, clock_timestamp(), d.count, d.events
    FROM (SELECT * FROM moved ORDER BY id) d;
    RETURN NULL;
END $$;
DROP INDEX scores_event_pushed;
ALTER TABLE scores_event DROP COLUMN pushed;
ALTER TABLE scores_eventdraft DROP COLUMN pushed;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("scores", "0026_events"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            state_operations=[
                migrations.AddField(model_name="eventdraft", name="pushed", field=models.BooleanField(default=False)),
                migrations.AddField(model_name="event", name="pushed", field=models.BooleanField(default=False)),
            ],
        ),
    ]
