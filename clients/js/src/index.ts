// leaderboard-client for JavaScript: Node game servers (signed: submissions, batching, tokens)
// and browser game clients (a player's token: their rank, friends, the live board). The same
// surface as the Python client (clients/python/, docs/clients.md).

import { ApiError, LeaderboardError, TransportError, errorFor } from "./errors.js";

export * from "./errors.js";

// --- signing (docs/api.md §3.1) ---------------------------------------------------------

const encoder = new TextEncoder();

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The X-Signature value: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<METHOD>.<path>.<body>")>.
 * Web Crypto: Node 20+ and browsers (a browser never holds a server secret: it reads with a token). */
export async function sign(secret: string, method: string, path: string, body: Uint8Array | string = "",
                           timestamp?: number): Promise<string> {
  const t = timestamp ?? Math.floor(Date.now() / 1000);
  const bodyBytes = typeof body === "string" ? encoder.encode(body) : body;
  const head = encoder.encode(`${t}.${method.toUpperCase()}.${path}.`);
  const message = new Uint8Array(head.length + bodyBytes.length);
  message.set(head);
  message.set(bodyBytes, head.length);
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `t=${t},v1=${hex(await crypto.subtle.sign("HMAC", key, message))}`;
}

// --- what a game server sends ------------------------------------------------------------

export interface Result {
  player: string;
  board: string;
  score: number;
  display_name?: string;
  metadata?: Record<string, unknown>;
  region?: string;
  subscores?: Record<string, number>;
}

export interface Match {
  /** the idempotency key: chosen once, sent again by every retry */
  match_id: string;
  /** RFC 3339 with offset */
  ended_at: string;
  results: Result[];
}

/** A match ended now (or at endedAt) with a fresh random id (or matchId). */
export function newMatch(results: Result[], opts: { matchId?: string; endedAt?: Date | string } = {}): Match {
  const ended = opts.endedAt ?? new Date();
  return {
    match_id: opts.matchId ?? `m-${crypto.randomUUID().replaceAll("-", "")}`,
    ended_at: typeof ended === "string" ? ended : ended.toISOString(),
    results,
  };
}

// --- answers -------------------------------------------------------------------------------

export interface Submitted {
  match_id: string;
  status: "accepted" | "held" | "rejected";
  duplicate: boolean;
  /** a batch's rejected match: why */
  error?: ApiError;
}

export interface Entry {
  rank: number; player: string; display_name: string | null; score: number; metadata?: unknown;
  /** only on boards that declare sub-scores (docs/api.md §2.3) */
  subscores?: Record<string, number>;
}
export interface Top { game: string; board: string; window: string; total: number; entries: Entry[]; next_cursor?: string | null }
export interface Standing {
  player: string; rank: number | null; score: number | null; total: number; percentile: number | null;
  around: Entry[]; window: string; display_name?: string | null; rank_exact: boolean; rank_error?: number;
  subscores?: Record<string, number>;
}
export interface FriendEntry extends Entry { board_rank: number }
export interface Friends { player: string; window: string; entries: FriendEntry[] }
export interface FrozenEntry extends Entry { position: number }
// group: only on a league group's standings (standings(..., { group })), version then the group's own
export interface Standings { game: string; board: string; window: string; version: number; frozen_at: string; total: number; entries: FrozenEntry[]; group?: string }
export interface Histogram { window: string; total: number; refreshed_at: string | null; buckets: { min: number; max: number; count: number }[] }
export interface PlayerToken { player: string; token: string; expires_at: string }
/** One event of the game's feed (docs/api.md §13.1); `id` is its cursor. */
export interface Event { id: string; type: string; at: string; data: Record<string, unknown> }
export interface EventsPage { events: Event[]; next: string }

// --- retries -------------------------------------------------------------------------------

export interface RetryPolicy {
  /** tries in all, the first included */
  attempts: number;
  /** ms before the second try, doubling (full jitter) */
  baseDelayMs: number;
  maxDelayMs: number;
  /** a Retry-After longer than this (s) is not waited: the error is thrown */
  maxRetryAfter: number;
  statuses: number[];
}

export const DEFAULT_RETRY: RetryPolicy = {
  attempts: 6, baseDelayMs: 200, maxDelayMs: 10_000, maxRetryAfter: 120, statuses: [429, 502, 503, 504],
};

/** ms to wait before retry number `retry` (1 for the first): Retry-After plus up to 10 %, else backoff. */
export function retryDelayMs(policy: RetryPolicy, retry: number, retryAfter: number | null): number {
  if (retryAfter !== null) return retryAfter * 1000 + Math.random() * (100 * retryAfter + 50);
  return Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
}

function parseRetryAfter(value: string | null): number | null {
  if (!value) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// --- the client ----------------------------------------------------------------------------

export interface ClientOptions {
  keyId?: string;
  secret?: string;
  retry?: Partial<RetryPolicy>;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | undefined | null>;

/** A game server's (with keyId and secret) or a game client's (with tokens) client for one game. */
export class Client {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  private readonly keyId?: string;
  private readonly secret?: string;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;

  constructor(baseUrl: string, readonly game: string, opts: ClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.keyId = opts.keyId;
    this.secret = opts.secret;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  path(segments: string[], query: Query = {}): string {
    const path = "/api/v1/games/" + [this.game, ...segments].map(encodeURIComponent).join("/");
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) params.append(k, String(v));
    const qs = params.toString();
    return qs ? `${path}?${qs}` : path;
  }

  /** Send one call, retrying on no answer, 429, 502, 503, 504 with the same body. */
  async call<T>(method: string, path: string, opts: { body?: unknown; token?: string; signed?: boolean } = {}): Promise<T> {
    const body = opts.body === undefined ? "" : JSON.stringify(opts.body);
    for (let attempt = 1; ; attempt++) {
      let error: LeaderboardError;
      try {
        const headers: Record<string, string> = { Accept: "application/json" };
        if (body) headers["Content-Type"] = "application/json";
        if (opts.token !== undefined) headers.Authorization = `Bearer ${opts.token}`;
        else if (opts.signed !== false && this.keyId && this.secret) {
          headers["X-Key-Id"] = this.keyId;
          headers["X-Signature"] = await sign(this.secret, method, path, body);
        }
        const response = await this.fetchFn(this.baseUrl + path, {
          method, headers, body: body || undefined, signal: AbortSignal.timeout(this.timeoutMs),
        });
        const text = await response.text();
        if (response.ok) return JSON.parse(text) as T;
        error = errorOf(response, text);
      } catch (exc) {
        if (exc instanceof LeaderboardError) throw exc;
        error = new TransportError(`${method} ${path}: ${String(exc)}`);
      }
      const retryable = error instanceof TransportError
        || (error instanceof ApiError && this.retry.statuses.includes(error.status)
            && (error.retryAfter === null || error.retryAfter <= this.retry.maxRetryAfter));
      if (!retryable || attempt >= this.retry.attempts) throw error;
      await sleep(retryDelayMs(this.retry, attempt, error instanceof ApiError ? error.retryAfter : null));
    }
  }

  async submit(match: Match): Promise<Submitted> {
    return this.call<Submitted>("POST", this.path(["matches"]), { body: match });
  }

  /** Any number of matches, 1000 a request; a bad one is status "rejected" with its error. */
  async submitBatch(matches: Match[]): Promise<Submitted[]> {
    const out: Submitted[] = [];
    for (let i = 0; i < matches.length; i += 1000) {
      const answer = await this.call<{ results: (Submitted & { error?: { code?: string; message?: string } })[] }>(
        "POST", this.path(["matches", "batch"]), { body: { matches: matches.slice(i, i + 1000) } });
      for (const r of answer.results) {
        const e = r.error;
        out.push({ match_id: r.match_id, status: r.status, duplicate: Boolean(r.duplicate),
                   ...(r.status === "rejected" ? { error: errorFor(400, e?.code, e?.message ?? "rejected", { body: e }) } : {}) });
      }
    }
    return out;
  }

  batcher(opts: BatcherOptions = {}): Batcher {
    return new Batcher(this, opts);
  }

  async setFriends(player: string, friends: string[]): Promise<string[]> {
    return (await this.call<{ friends: string[] }>("PUT", this.path(["players", player, "friends"]), { body: { friends } })).friends;
  }

  async playerToken(player: string): Promise<PlayerToken> {
    // a signed minting request is served once (docs/api.md §3.1): the nonce keeps two tokens
    // asked for the same player within one second two requests
    const nonce = crypto.randomUUID().replaceAll("-", "");
    const d = await this.call<{ token: string; expires_at: string }>("POST", this.path(["players", player, "token"], { nonce }));
    return { player, ...d };
  }

  async top(board: string, q: { window?: string; limit?: number; offset?: number; cursor?: string; region?: string } = {}): Promise<Top> {
    return this.call<Top>("GET", this.path(["boards", board, "top"], { window: q.window ?? "all", region: q.region, limit: q.limit ?? 10, offset: q.offset, cursor: q.cursor }), { signed: false });
  }

  async player(board: string, player: string, q: { window?: string; around?: number; region?: string; token?: string } = {}): Promise<Standing> {
    return this.call<Standing>("GET", this.path(["boards", board, "players", player], { window: q.window ?? "all", region: q.region, around: q.around ?? 2 }), { token: q.token });
  }

  async friends(board: string, player: string, q: { window?: string; region?: string; token?: string } = {}): Promise<Friends> {
    return this.call<Friends>("GET", this.path(["boards", board, "players", player, "friends"], { window: q.window ?? "all", region: q.region }), { token: q.token });
  }

  // group: a league group's own frozen standings in a season window (the league read's `group`,
  // docs/competitions.md "Leagues"); UnknownGroup if none is frozen there
  async standings(board: string, window: string, q: { limit?: number; offset?: number; region?: string; version?: number; group?: string } = {}): Promise<Standings> {
    return this.call<Standings>("GET", this.path(["boards", board, "standings", window], { limit: q.limit ?? 100, offset: q.offset ?? 0, region: q.region, version: q.version, group: q.group }));
  }

  /** One page of the game's events after the cursor `after` (none: the oldest kept); a key of scope events. */
  async eventsPage(q: { after?: string; limit?: number } = {}): Promise<EventsPage> {
    return this.call<EventsPage>("GET", this.path(["events"], { after: q.after, limit: q.limit ?? 100 }));
  }

  /** Every event after `after`, each once, in order; the caller keeps the last `id` it handled
   * to resume. Stops when caught up; with `follow`, asks again every `pollMs` instead. */
  async *events(q: { after?: string; limit?: number; follow?: boolean; pollMs?: number } = {}): AsyncGenerator<Event> {
    let after = q.after;
    for (;;) {
      const page = await this.eventsPage({ after, limit: q.limit ?? 1000 });
      yield* page.events;
      after = page.next;
      if (page.events.length === 0) {
        if (!q.follow) return;
        await new Promise((resolve) => setTimeout(resolve, q.pollMs ?? 1000));
      }
    }
  }

  async histogram(board: string, q: { window?: string; region?: string } = {}): Promise<Histogram> {
    return this.call<Histogram>("GET", this.path(["boards", board, "histogram"], { window: q.window ?? "all", region: q.region }), { signed: false });
  }

  /** The board's live messages (docs/api.md §9); see live(). */
  live(board: string, opts: LiveOptions = {}): AsyncIterable<LiveMessage> {
    return live(this.baseUrl, this.game, board, { retry: this.retry, ...opts });
  }
}

function errorOf(response: Response, text: string): ApiError {
  let code: string | undefined;
  let message = response.statusText || `HTTP ${response.status}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
    const err = (body as { error?: { code?: string; message?: string } }).error;
    if (err && typeof err === "object") {
      code = err.code;
      message = err.message ?? message;
    }
  } catch {
    // not JSON: a proxy's page; the status says it
  }
  return errorFor(response.status, code, message, { retryAfter: parseRetryAfter(response.headers.get("Retry-After")), body });
}

// --- the batcher ---------------------------------------------------------------------------

export interface BatcherOptions {
  maxSize?: number;
  maxDelayMs?: number;
  onResult?: (match: Match, submitted: Submitted) => void;
  onError?: (matches: Match[], error: ApiError) => void;
  /** Node: send what is queued on SIGTERM, then exit 143 (default true) */
  handleSignals?: boolean;
  closeTimeoutMs?: number;
}

/** add() returns at once; a batch goes when maxSize wait or the oldest waited maxDelayMs. A batch
 * without an answer is queued again in front (same match_ids); close() sends everything. */
export class Batcher {
  readonly unsent: Match[] = [];
  sent = 0;
  private queue: Match[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private sending: Promise<void> | null = null;
  private closed = false;
  private readonly maxSize: number;
  private readonly maxDelayMs: number;
  private readonly onSigterm?: () => void;

  constructor(private readonly client: Client, private readonly opts: BatcherOptions = {}) {
    this.maxSize = opts.maxSize ?? 100;
    this.maxDelayMs = opts.maxDelayMs ?? 1000;
    const proc = (globalThis as { process?: NodeJS.Process }).process;
    if ((opts.handleSignals ?? true) && proc?.once) {
      this.onSigterm = () => {
        void this.close().finally(() => proc.exit(143));
      };
      proc.once("SIGTERM", this.onSigterm);
    }
  }

  get pending(): number {
    return this.queue.length;
  }

  add(match: Match): void {
    if (this.closed) throw new LeaderboardError("the batcher is closed");
    this.queue.push(match);
    if (this.queue.length >= this.maxSize) void this.flush();
    else if (this.timer === null) this.timer = setTimeout(() => void this.flush(), this.maxDelayMs);
  }

  /** Send everything queued now; resolves when it is answered (or re-queued after a failure). */
  async flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    while (this.sending) await this.sending;
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, 1000);
    this.sending = this.send(batch).finally(() => {
      this.sending = null;
    });
    await this.sending;
    if (this.queue.length >= this.maxSize || (this.closed && this.queue.length)) await this.flush();
    else if (this.queue.length && this.timer === null) this.timer = setTimeout(() => void this.flush(), this.maxDelayMs);
  }

  private async send(batch: Match[]): Promise<void> {
    try {
      const answers = await this.client.submitBatch(batch);
      this.sent += batch.length;
      answers.forEach((a, i) => this.opts.onResult?.(batch[i], a));
    } catch (exc) {
      const retryable = !(exc instanceof ApiError) || this.client.retry.statuses.includes(exc.status) || exc.status >= 500;
      if (retryable && !this.closed) {
        this.queue.unshift(...batch); // never dropped: sent again, same match_ids
        await sleep(retryDelayMs(this.client.retry, 3, null) + 50);
      } else if (retryable) {
        this.queue.unshift(...batch);
        throw exc;
      } else {
        this.unsent.push(...batch);
        this.opts.onError?.(batch, exc as ApiError);
      }
    }
  }

  /** Take no more; send everything queued (up to closeTimeoutMs), then stop. */
  async close(): Promise<void> {
    this.closed = true;
    const proc = (globalThis as { process?: NodeJS.Process }).process;
    if (this.onSigterm && proc) proc.removeListener("SIGTERM", this.onSigterm);
    const deadline = Date.now() + (this.opts.closeTimeoutMs ?? 30_000);
    while ((this.queue.length || this.sending) && Date.now() < deadline) {
      try {
        await this.flush();
      } catch {
        await sleep(200);
      }
    }
    this.unsent.push(...this.queue.splice(0));
  }
}

// --- the live board ------------------------------------------------------------------------

export type LiveMessage =
  | { type: "top"; window: string; entries: Entry[] }
  | { type: "rank"; rank: number | null; score: number | null; subscores?: Record<string, number> }
  | { type: "passed"; by: { player: string; display_name: string | null }; rank: number | null };

export interface LiveOptions {
  window?: string;
  token?: string;
  region?: string;
  reconnect?: boolean;
  retry?: RetryPolicy;
  /** a WebSocket constructor: the browser's (default), Node 22's, or Node 20's with --experimental-websocket */
  WebSocket?: typeof WebSocket;
}

export function liveUrl(baseUrl: string, game: string, board: string, opts: { window?: string; token?: string; region?: string } = {}): string {
  const ws = baseUrl.replace(/^http/, "ws").replace(/\/+$/, "");
  const params = new URLSearchParams({ window: opts.window ?? "all" });
  if (opts.region) params.set("region", opts.region);
  if (opts.token) params.set("token", opts.token);
  return `${ws}/ws/games/${encodeURIComponent(game)}/boards/${encodeURIComponent(board)}/?${params}`;
}

const REFUSALS: Record<number, (m: string) => ApiError> = {
  4400: (m) => errorFor(400, null, m),
  4401: (m) => errorFor(401, null, m),
  4403: (m) => errorFor(403, null, m),
  4404: (m) => errorFor(404, null, m),
};

/** The board's messages; reconnects after drops (backoff) and at once on 4000 (window ended);
 * a refusal (4401 bad token, 4403, 4404, a refused handshake) throws its error. */
export async function* live(baseUrl: string, game: string, board: string, opts: LiveOptions = {}): AsyncGenerator<LiveMessage> {
  const WS = opts.WebSocket ?? globalThis.WebSocket;
  if (!WS) throw new LeaderboardError("no WebSocket here: pass opts.WebSocket (Node 20: --experimental-websocket)");
  const policy = opts.retry ?? DEFAULT_RETRY;
  const url = liveUrl(baseUrl, game, board, opts);
  let failures = 0;
  for (;;) {
    const inbox: LiveMessage[] = [];
    let wake: (() => void) | null = null;
    let closed: { code: number; opened: boolean } | null = null;
    let opened = false;
    const socket = new WS(url);
    socket.onopen = () => { opened = true; failures = 0; };
    socket.onmessage = (e: MessageEvent) => { inbox.push(JSON.parse(String(e.data))); wake?.(); };
    socket.onclose = (e: CloseEvent) => { closed = { code: e.code, opened }; wake?.(); };
    try {
      for (;;) {
        while (inbox.length) yield inbox.shift()!;
        if (closed) break;
        await new Promise<void>((resolve) => { wake = resolve; });
        wake = null;
      }
    } finally {
      if (!closed) socket.close();
    }
    const { code, opened: wasOpen } = closed as { code: number; opened: boolean };
    if (REFUSALS[code]) throw REFUSALS[code](`websocket closed with ${code}`);
    if (!wasOpen && code === 1006 && failures >= 2) throw new TransportError(`websocket refused or unreachable: ${url.split("?")[0]}`);
    if (opts.reconnect === false) return;
    if (code === 4000) continue;
    failures++;
    await sleep(retryDelayMs(policy, Math.min(failures, 8), null) + 100);
  }
}
