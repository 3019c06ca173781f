// Every answer of docs/api.md mapped to its type or error, against the real service.
import assert from "node:assert/strict";
import { test } from "node:test";

import * as lb from "../src/index.js";
import { env, past, settled, skip, uid } from "./env.js";

const client = () => new lb.Client(env.url, env.game, { keyId: env.keyId, secret: env.secret });

test("a match is accepted, then a duplicate; another body is a MatchConflict", { skip }, async () => {
  const c = client();
  const match = lb.newMatch([{ player: `${uid()}-a`, board: "rating", score: 1450, display_name: "Alice" }], { endedAt: past() });
  assert.deepEqual(await c.submit(match), { match_id: match.match_id, status: "accepted", duplicate: false });
  assert.equal((await c.submit(match)).duplicate, true);
  const other = { ...match, results: [{ ...match.results[0], score: 1451 }] };
  await assert.rejects(c.submit(other), (e: unknown) => e instanceof lb.MatchConflict && e instanceof lb.Conflict && e.status === 409);
});

test("refused matches throw their code's error", { skip }, async () => {
  const c = client();
  await assert.rejects(c.submit(lb.newMatch([{ player: "x", board: "rating", score: 10_000_001 }], { endedAt: past() })),
    (e: unknown) => e instanceof lb.ScoreOutOfBounds && e.status === 400 && e.code === "score_out_of_bounds");
  await assert.rejects(c.submit(lb.newMatch([{ player: "x", board: "nope", score: 1 }], { endedAt: past() })),
    (e: unknown) => e instanceof lb.UnknownBoard && e.status === 400);
  await assert.rejects(c.submit(lb.newMatch([{ player: "x", board: "rating", score: 1 }], { endedAt: new Date(Date.now() + 3600_000) })),
    lb.EndedAtInFuture);
  const wrong = new lb.Client(env.url, env.game, { keyId: env.keyId, secret: "wrong" });
  await assert.rejects(wrong.submit(lb.newMatch([{ player: "x", board: "rating", score: 1 }])), lb.Unauthorized);
});

test("a batch answers each match in order", { skip }, async () => {
  const id = uid();
  const good = lb.newMatch([{ player: `${id}-a`, board: "rating", score: 5 }], { endedAt: past() });
  const bad = lb.newMatch([{ player: `${id}-b`, board: "rating", score: -1 }], { endedAt: past() });
  const answers = await client().submitBatch([good, bad, good]);
  assert.deepEqual(answers.map((a) => a.status), ["accepted", "rejected", "accepted"]);
  assert.equal(answers[2].duplicate, true);
  assert.ok(answers[1].error instanceof lb.ScoreOutOfBounds);
});

test("reads carry the sub-scores of a board that declares them", { skip }, async () => {
  const c = client();
  const id = uid();
  const [a, b] = [`${id}-a`, `${id}-b`];
  await c.submit(lb.newMatch([{ player: a, board: "arena", score: 90, subscores: { kills: 3 } },
    { player: b, board: "arena", score: 90, subscores: { kills: 7 } }], { endedAt: past() }));
  await settled(); // on the boards within docs/api.md §4.4's second of the 2xx
  const mine = (await c.top("arena", { limit: 100 })).entries.filter((e) => e.player === a || e.player === b);
  assert.deepEqual(mine.map((e) => [e.player, e.subscores]), [[b, { kills: 7 }], [a, { kills: 3 }]]); // more kills first
  assert.deepEqual((await c.player("arena", a)).subscores, { kills: 3 });
  assert.ok((await c.top("rating")).entries.every((e) => e.subscores === undefined)); // a board without them
});

test("reads answer the shapes of docs/api.md §5; a token reads as its player only", { skip }, async () => {
  const c = client();
  const id = uid();
  const [a, b] = [`${id}-a`, `${id}-b`];
  await c.submit(lb.newMatch([{ player: a, board: "rating", score: 9_500_001, display_name: "Ana" }, { player: b, board: "rating", score: 9_500_000 }], { endedAt: past() }));
  await settled(); // on the boards within docs/api.md §4.4's second of the 2xx
  const top = await c.top("rating", { limit: 100 });
  assert.equal(top.window, "all");
  const mine = top.entries.filter((e) => e.player === a || e.player === b);
  assert.deepEqual(mine.map((e) => e.player), [a, b]);
  assert.equal(mine[0].display_name, "Ana");
  const standing = await c.player("rating", b, { around: 1 });
  assert.equal(standing.rank, mine[1].rank);
  assert.equal(standing.rank_exact, true);
  assert.deepEqual(await c.setFriends(a, [b]), [b]);
  assert.deepEqual((await c.friends("rating", a)).entries.map((f) => [f.player, f.rank]), [[a, 1], [b, 2]]);
  assert.ok(Array.isArray((await c.histogram("rating")).buckets));

  const token = await c.playerToken(a);
  const browser = new lb.Client(env.url, env.game);
  assert.equal((await browser.player("rating", a, { token: token.token })).score, 9_500_001);
  await assert.rejects(browser.player("rating", `${id}-nobody`, { token: token.token }), lb.ApiError);
  await assert.rejects(c.player("rating", `${id}-nobody`), (e: unknown) => e instanceof lb.UnknownPlayer && e instanceof lb.NotFound);
  await assert.rejects(c.top("rating", { window: "fortnightly" }), lb.UnknownWindow);
  await assert.rejects(new lb.Client(env.url, "no-such-game").top("rating"), lb.UnknownGame);
  await assert.rejects(c.standings("rating", "daily:" + new Date().toISOString().slice(0, 10)), lb.NotFrozen);
});

test("a league group's standings read sends the group (docs/api.md §10)", { skip }, async () => {
  // this game has no league, so no window has a frozen group: unknown_group, where the same read
  // without it is not_frozen
  const c = client();
  await assert.rejects(c.standings("rating", "daily:2026-11-28"), lb.NotFrozen);
  await assert.rejects(c.standings("rating", "daily:2026-11-28", { group: "1", limit: 10 }),
    (e: unknown) => e instanceof lb.UnknownGroup && e instanceof lb.NotFound && e.status === 404 && e.code === "unknown_group");
});

test("every code has its class", () => {
  for (const [code, cls] of lb.ERROR_CODES) {
    const e = lb.errorFor(418, code, "m");
    assert.equal(e.constructor, cls);
    assert.equal(e.code, code);
  }
  assert.ok(lb.errorFor(503, "something_new", "m") instanceof lb.ServiceUnavailable);
});

test("the signature is docs/api.md §3.1's", async () => {
  // HMAC-SHA256("s", "1.GET./p.") computed independently with node:crypto
  const { createHmac } = await import("node:crypto");
  const expected = createHmac("sha256", "s").update("1.GET./p.").digest("hex");
  assert.equal(await lb.sign("s", "get", "/p", "", 1), `t=1,v1=${expected}`);
});

test("the events feed tells a match and its value once, and resumes from a kept cursor (docs/api.md §13.1)", { skip }, async () => {
  const c = client();
  let start: string | undefined;
  for await (const e of c.events()) start = e.id;
  const id = uid();
  const match = lb.newMatch([{ player: `${id}-a`, board: "rating", score: 321 }], { endedAt: past() });
  await c.submit(match);
  await settled();
  const heard: lb.Event[] = [];
  for await (const e of c.events({ after: start, limit: 1 })) heard.push(e);
  assert.ok(heard.some((e) => e.type === "match.accepted" && e.data.match_id === match.match_id));
  assert.ok(heard.some((e) => e.type === "value.changed" && e.data.player === `${id}-a` && e.data.after === 321));
  const rest: lb.Event[] = [];
  for await (const e of c.events({ after: heard[0].id })) rest.push(e);
  assert.deepEqual(rest, heard.slice(1));
  await assert.rejects(c.eventsPage({ after: "nope" }), lb.InvalidCursor);
});
