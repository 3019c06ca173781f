// Retries stay idempotent, through a loopback proxy in front of the real service that drops the
// answer after the service stored the match, or answers 503 overloaded with Retry-After: 1 (the
// service does neither on demand; as clients/python/tests/misbehaving.py).
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";

import * as lb from "../src/index.js";
import { env, past, settled, skip, uid } from "./env.js";

type Action = "forward" | "drop" | "overloaded";

async function proxy(plan: Action[]): Promise<{ url: string; seen: { at: number; body: string; action: Action }[]; close: () => Promise<void> }> {
  const seen: { at: number; body: string; action: Action }[] = [];
  const server = http.createServer(async (req, res) => {
    let body = "";
    req.setEncoding("utf8"); // the bodies are JSON, UTF-8
    for await (const c of req) body += c;
    const action = plan.shift() ?? "forward";
    seen.push({ at: Date.now(), body, action });
    if (action === "overloaded") {
      res.writeHead(503, { "Content-Type": "application/json", "Retry-After": "1" });
      res.end(JSON.stringify({ error: { code: "overloaded", message: "try again later" } }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && !["host", "connection", "content-length"].includes(k)) headers[k] = v;
    const upstream = await fetch(env.url + req.url, { method: req.method, headers, body: body || undefined });
    const text = await upstream.text();
    if (action === "drop") {
      req.socket.destroy(); // stored upstream; the client hears nothing
      return;
    }
    res.writeHead(upstream.status, { "Content-Type": upstream.headers.get("content-type") ?? "application/json" });
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

const direct = () => new lb.Client(env.url, env.game, { keyId: env.keyId, secret: env.secret });

test("a submission whose answer was lost is retried and counted once", { skip }, async () => {
  const p = await proxy(["drop"]);
  const player = `${uid()}-p`;
  try {
    const through = new lb.Client(p.url, env.game, { keyId: env.keyId, secret: env.secret });
    const answer = await through.submit(lb.newMatch([{ player, board: "kills", score: 5 }], { endedAt: past() }));
    assert.equal(answer.duplicate, true);
  } finally {
    await p.close();
  }
  assert.deepEqual(p.seen.map((s) => s.action), ["drop", "forward"]);
  assert.equal(p.seen[0].body, p.seen[1].body);
  await settled(); // a second count, had there been one, would be on the board now (docs/api.md §4.4)
  assert.equal((await direct().player("kills", player)).score, 5);
});

test("a 503 overloaded with Retry-After is waited out, then succeeds", { skip }, async () => {
  const p = await proxy(["overloaded", "overloaded"]);
  const player = `${uid()}-p`;
  try {
    const through = new lb.Client(p.url, env.game, { keyId: env.keyId, secret: env.secret });
    const answer = await through.submit(lb.newMatch([{ player, board: "kills", score: 5 }], { endedAt: past() }));
    assert.equal(answer.status, "accepted");
    assert.equal(answer.duplicate, false);
  } finally {
    await p.close();
  }
  assert.deepEqual(p.seen.map((s) => s.action), ["overloaded", "overloaded", "forward"]);
  for (let i = 1; i < p.seen.length; i++) assert.ok(p.seen[i].at - p.seen[i - 1].at >= 1000, "Retry-After: 1 honoured");
  assert.equal(new Set(p.seen.map((s) => s.body)).size, 1);
  await settled(); // on the boards within docs/api.md §4.4's second of the 2xx
  assert.equal((await direct().player("kills", player)).score, 5);
});

test("past its retries the overload is thrown with its retry-after", { skip }, async () => {
  const p = await proxy(["overloaded", "overloaded"]);
  try {
    const through = new lb.Client(p.url, env.game, { keyId: env.keyId, secret: env.secret, retry: { attempts: 2 } });
    await assert.rejects(through.submit(lb.newMatch([{ player: "x", board: "kills", score: 1 }])),
      (e: unknown) => e instanceof lb.Overloaded && e.retryAfter === 1);
  } finally {
    await p.close();
  }
});
