// A game server holding 40 matches in its batcher (only a close sends them), until SIGTERM.
import * as lb from "../src/index.js";
import { env, past } from "./env.js";

const player = process.argv[2];
const batcher = new lb.Client(env.url, env.game, { keyId: env.keyId, secret: env.secret }).batcher({ maxSize: 1000, maxDelayMs: 3600_000 });
for (let i = 0; i < 40; i++) batcher.add(lb.newMatch([{ player, board: "kills", score: 1 }], { endedAt: past() }));
process.stdout.write(`queued ${batcher.pending}\n`);
setInterval(() => {}, 60_000);
