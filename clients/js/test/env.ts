// The service these tests run against (as clients/python/tests/conftest.py): LEADERBOARD_URL,
// LEADERBOARD_GAME (configured as clients/python/tests/game.toml), LEADERBOARD_KEY_ID and
// LEADERBOARD_SECRET. tests/clients/test_js_client.py sets them in `make test`.
import { randomUUID } from "node:crypto";

export const env = {
  url: process.env.LEADERBOARD_URL ?? "",
  game: process.env.LEADERBOARD_GAME ?? "",
  keyId: process.env.LEADERBOARD_KEY_ID ?? "",
  secret: process.env.LEADERBOARD_SECRET ?? "",
};
export const missing = Object.entries(env).filter(([, v]) => !v).map(([k]) => k);
export const skip = missing.length ? `no service to test against: set LEADERBOARD_* (${missing.join(", ")})` : false;
export const uid = () => randomUUID().replaceAll("-", "").slice(0, 10);
export const past = () => new Date(Date.now() - 5000);

// A 2xx means the match is stored; the projector applies it to the boards afterwards, within
// docs/api.md §4.4's second. A test that reads what it just wrote awaits settled() in between:
// GET /healthz reports what acknowledged is still on its way as `details.ingest_lag.pending`
// (docs/api.md §11). Polled with a deadline, never a guessed sleep; another test's writes can
// only make the wait longer, never end it early. The deadline is generous for a shared machine.
export const SETTLE_MS = 10_000;

export async function settled(): Promise<void> {
  const end = Date.now() + SETTLE_MS;
  let last = "no answer";
  for (;;) {
    try {
      const answer = await fetch(`${env.url}/healthz`);
      const text = await answer.text();
      last = `${answer.status} ${text.slice(0, 1000)}`;
      if (JSON.parse(text)?.details?.ingest_lag?.pending === 0) return;
    } catch (e) {
      last = String(e); // not up, or not JSON: ask again
    }
    if (Date.now() > end) throw new Error(`acknowledged results not on the boards within ${SETTLE_MS} ms: ${last}`);
    await new Promise((r) => setTimeout(r, 20)); // polling with a deadline
  }
}
