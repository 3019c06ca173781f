// The batcher: by size, on close, and under kill -TERM of its process.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import * as lb from "../src/index.js";
import { env, past, settled, skip, uid } from "./env.js";

const client = () => new lb.Client(env.url, env.game, { keyId: env.keyId, secret: env.secret });
const kills = (player: string) => lb.newMatch([{ player, board: "kills", score: 1 }], { endedAt: past() });

async function until(condition: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (!condition()) {
    if (Date.now() > end) throw new Error(`${what} within 30 s`);
    await new Promise((r) => setTimeout(r, 20)); // polling with a deadline
  }
}

test("it sends when maxSize matches wait, and close sends the rest", { skip }, async () => {
  const player = `${uid()}-p`;
  const answers: lb.Submitted[] = [];
  const b = client().batcher({ maxSize: 5, maxDelayMs: 3600_000, handleSignals: false, onResult: (_m, s) => answers.push(s) });
  for (let i = 0; i < 4; i++) b.add(kills(player));
  assert.equal(b.sent, 0);
  b.add(kills(player));
  await until(() => b.sent === 5, "five were not sent");
  b.add(kills(player));
  b.add(kills(player));
  await b.close();
  assert.equal(b.sent, 7);
  assert.deepEqual(b.unsent, []);
  assert.throws(() => b.add(kills(player)), lb.LeaderboardError);
  assert.equal(answers.length, 7);
  await settled(); // on the boards within docs/api.md §4.4's second of the 2xx
  assert.equal((await client().player("kills", player)).score, 7);
});

test("it sends the oldest after maxDelayMs", { skip }, async () => {
  const player = `${uid()}-p`;
  const b = client().batcher({ maxSize: 1000, maxDelayMs: 200, handleSignals: false });
  b.add(kills(player));
  await until(() => b.sent === 1, "the match was not sent after maxDelayMs");
  await b.close();
});

test("kill -TERM of its process sends what it holds", { skip }, async () => {
  const player = `${uid()}-p`;
  const script = fileURLToPath(new URL("./gameserver.js", import.meta.url));
  const child = spawn(process.execPath, [script, player], { stdio: ["ignore", "pipe", "inherit"], env: process.env });
  const [line] = (await once(child.stdout!, "data")) as [Buffer];
  assert.equal(line.toString().trim(), "queued 40");
  await settled(); // anything it had sent would be on the boards now (docs/api.md §4.4)
  await assert.rejects(client().player("kills", player), lb.UnknownPlayer); // nothing sent yet
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 143);
  await settled(); // what it sent on its way out, on the boards within docs/api.md §4.4's second
  assert.equal((await client().player("kills", player)).score, 40);
});
