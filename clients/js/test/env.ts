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
