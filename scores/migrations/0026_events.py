"""The score-events feed (docs/architecture.md, "The events feed").

- scores_eventdraft: what a transaction has to say, written as it goes. UNLOGGED: a row never
  outlives its transaction (the trigger below moves it before the commit), so no other session
  ever sees one and nothing of it needs to survive a crash or reach a standby.
- scores_event: the feed, one row per (transaction, game, chunk of at most 1000 events),
  partitioned by the day it was published (`at`), so retention drops whole days. A chunk is its
  events' JSON objects one per line (JSON never holds a raw newline): a page is cut from it and
  sent without parsing it, and no JSON type checks it again on the way in. lz4, not pglz: the
  same order of size for several times less CPU.
- scores_event_publish(): a deferred constraint trigger, so it runs at COMMIT, after every other
  statement of the transaction. It takes the feed's advisory lock, numbers the transaction's
  drafts from scores_event_pos and moves them into the feed. The lock is held from there to the
  end of the commit, so positions become visible in the order they were taken: a reader that
  saw position N has seen every position below it, whatever order the writers began in.
- scores_eventfloor: the last event retention dropped (one row, none before the first drop); a
  cursor before it is expired.
"""

from django.db import migrations, models

FEED_LOCK = 7305  # scores.locks.FEED

FORWARD = f"""
CREATE UNLOGGED TABLE scores_eventdraft (
    id bigserial PRIMARY KEY,
    game_id bigint NOT NULL,
    events text COMPRESSION lz4 NOT NULL,
    count integer NOT NULL
);
CREATE SEQUENCE scores_event_pos;
CREATE TABLE scores_event (
    pos bigint NOT NULL,
    game_id bigint NOT NULL,
    at timestamptz NOT NULL,
    count integer NOT NULL,
    events text COMPRESSION lz4 NOT NULL,
    PRIMARY KEY (pos, at)
) PARTITION BY RANGE (at);
CREATE TABLE scores_event_default PARTITION OF scores_event DEFAULT;
CREATE INDEX scores_event_game_pos ON scores_event (game_id, pos) INCLUDE (count);
CREATE TABLE scores_eventfloor (
    id smallint PRIMARY KEY CHECK (id = 1),
    pos bigint NOT NULL,
    idx integer NOT NULL
);

CREATE FUNCTION scores_event_publish() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- the first draft's trigger moves them all (a transaction sees no other's drafts: they
    -- never commit); the others find nothing left
    PERFORM pg_advisory_xact_lock({FEED_LOCK}, 0);
    WITH moved AS (DELETE FROM scores_eventdraft RETURNING *)
    INSERT INTO scores_event (pos, game_id, at, count, events)
    SELECT nextval('scores_event_pos'), d.game_id, clock_timestamp(), d.count, d.events
    FROM (SELECT * FROM moved ORDER BY id) d;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER scores_eventdraft_publish AFTER INSERT ON scores_eventdraft
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION scores_event_publish();
"""

BACKWARD = """
DROP TRIGGER scores_eventdraft_publish ON scores_eventdraft;
DROP FUNCTION scores_event_publish();
DROP TABLE scores_eventfloor;
DROP TABLE scores_event;
DROP SEQUENCE scores_event_pos;
DROP TABLE scores_eventdraft;
"""


def make_partitions(apps, schema_editor):
    from scores.partitions import event_partitions_ensure

    event_partitions_ensure()


class Migration(migrations.Migration):
    dependencies = [
        ("scores", "0025_playertokengeneration"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, BACKWARD)],
            state_operations=[
                migrations.CreateModel(
                    name="EventDraft",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("game_id", models.BigIntegerField()),
                        ("events", models.TextField()),
                        ("count", models.IntegerField()),
                    ],
                ),
                migrations.CreateModel(
                    name="Event",
                    fields=[
                        ("pos", models.BigIntegerField(primary_key=True, serialize=False)),
                        ("game_id", models.BigIntegerField()),
                        ("at", models.DateTimeField()),
                        ("count", models.IntegerField()),
                        ("events", models.TextField()),
                    ],
                ),
                migrations.CreateModel(
                    name="EventFloor",
                    fields=[
                        ("id", models.SmallIntegerField(primary_key=True, serialize=False)),
                        ("pos", models.BigIntegerField()),
                        ("idx", models.IntegerField()),
                    ],
                ),
            ],
        ),
        migrations.RunPython(make_partitions, migrations.RunPython.noop),
    ]
