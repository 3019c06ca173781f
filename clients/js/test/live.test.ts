// The live board over the websocket (Node 20: --experimental-websocket, as `npm test` runs it).
import assert from "node:assert/strict";
import { test } from "node:test";

import * as lb from "../src/index.js";
import { env, past, settled, skip, uid } from "./env.js";

test("a player's socket hears the top and its rank, then its new rank", { skip }, async () => {
  const c = new lb.Client(env.url, env.game, { keyId: env.keyId, secret: env.secret });
  const id = uid();
  const [me, rival] = [`${id}-me`, `${id}-rival`];
  const best = (await c.top("live", { limit: 1 })).entries[0]?.score ?? 0;
  await c.submit(lb.newMatch([{ player: me, board: "live", score: best + 10 }, { player: rival, board: "live", score: best + 20 }], { endedAt: past() }));
  await settled(); // the socket's first messages read the boards: this match is on them (docs/api.md §4.4)
  const token = (await c.playerToken(me)).token;
  const seen: lb.LiveMessage[] = [];
  const deadline = setTimeout(() => { throw new Error(`no live update within 30 s: ${JSON.stringify(seen)}`); }, 30_000);
  for await (const m of new lb.Client(env.url, env.game).live("live", { token })) {
    seen.push(m);
    if (m.type === "rank" && m.rank === 2 && m.score === best + 10) {
      await c.submit(lb.newMatch([{ player: me, board: "live", score: best + 30 }], { endedAt: past() }));
    }
    if (m.type === "rank" && m.rank === 1) break;
  }
  clearTimeout(deadline);
  assert.equal(seen[0].type, "top");
  assert.deepEqual(seen[0].type === "top" ? seen[0].entries.slice(0, 2).map((e) => e.player) : [], [rival, me]);
  assert.deepEqual(seen.at(-1), { type: "rank", rank: 1, score: best + 30 });
});

test("a bad token is refused with Unauthorized", { skip }, async () => {
  await assert.rejects(async () => {
    for await (const _ of lb.live(env.url, env.game, "live", { token: "not-a-token" })) { /* nothing comes */ }
  }, lb.Unauthorized);
});
