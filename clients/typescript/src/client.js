// Client: the HTTP API of `stepwise serve` (internal/server/openapi.json),
// with fetch and ReadableStream alone, for Node 18+ and browsers.

import { StepwiseError, errorOf } from "./errors.js";
import { SSEParser } from "./sse.js";

// A retry policy says which failures a request is sent again after.
// "safe": the request may be repeated (a GET, a replay, or a POST with an
// Idempotency-Key, which the server answers once): a network error or
// timeout, 502, 503, 504, 429, and 409 in_progress (the first try with the
// key is still under way). "refused": only an answer that says the request
// was not acted on, 429; POST resume, cancel and fork, which carry no key,
// use it, since a lost answer leaves unknown whether they happened.
const SAFE = "safe";
const REFUSED = "refused";

/** Client is a client of one stepwise server. */
export class Client {
  #url;
  #token;
  #fetch;
  #retries;
  #retryDelay;
  #maxRetryDelay;
  #timeout;
  #idleTimeout;

  /**
   * @param {string} [url] the server, "http://127.0.0.1:8080" by default
   * @param {object} [options] token (sent as Authorization: Bearer), fetch
   *   (instead of globalThis.fetch), retries (4: tries after the first, for a
   *   transient failure), retryDelay (250 ms, doubled each try), maxRetryDelay
   *   (10 s, also the longest Retry-After honoured), timeout (30 s for an
   *   answer), idleTimeout (45 s of silence after which an event stream is
   *   taken for dead and reopened; the server pings every 15 s)
   */
  constructor(url = "http://127.0.0.1:8080", options = {}) {
    this.#url = String(url).replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((...args) => globalThis.fetch(...args));
    this.#retries = options.retries ?? 4;
    this.#retryDelay = options.retryDelay ?? 250;
    this.#maxRetryDelay = options.maxRetryDelay ?? 10_000;
    this.#timeout = options.timeout ?? 30_000;
    this.#idleTimeout = options.idleTimeout ?? 45_000;
  }

  /** url is the server's base URL. */
  get url() {
    return this.#url;
  }

  /** health is GET /healthz: {status: "ok"}. It needs no token. */
  health(options = {}) {
    return this.#call("GET", "/healthz", options);
  }

  /** openapi is GET /openapi.json: the API's description. */
  openapi(options = {}) {
    return this.#call("GET", "/openapi.json", options);
  }

  /** listAgents is GET /v1/agents: the names of the server's agents. */
  async listAgents(options = {}) {
    return (await this.#call("GET", "/v1/agents", options)).agents;
  }

  /**
   * createRun is POST /v1/runs: a run of `agent` on `input`, or on a message
   * history (`messages`, the OpenAI chat format). `wait` ("10s", up to "5m")
   * answers once the run leaves running. The request carries an
   * Idempotency-Key (`idempotencyKey`, or one drawn here) that its retries
   * reuse, so a retry never makes a second run.
   */
  createRun({ agent, input, messages, wait, idempotencyKey, signal } = {}) {
    const body = { agent };
    if (input !== undefined) body.input = input;
    if (messages !== undefined) body.messages = messages;
    if (wait !== undefined) body.options = { wait };
    return this.#call("POST", "/v1/runs", {
      body,
      key: idempotencyKey ?? newIdempotencyKey(),
      signal,
      timeout: this.#timeout + waitMillis(wait),
    });
  }

  /** getRun is GET /v1/runs/{id}. */
  getRun(runId, options = {}) {
    return this.#call("GET", runPath(runId), options);
  }

  /**
   * listRuns is GET /v1/runs: a page of runs, newest first, filtered by
   * status, agent or parent; the next page's cursor is `next_cursor`.
   */
  listRuns({ status, agent, parent, limit, cursor, signal } = {}) {
    return this.#call("GET", "/v1/runs", { query: { status, agent, parent, limit, cursor }, signal });
  }

  /** allRuns yields every run listRuns pages through. */
  async *allRuns({ status, agent, parent, limit, signal } = {}) {
    let cursor;
    do {
      const page = await this.listRuns({ status, agent, parent, limit, cursor, signal });
      yield* page.runs;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /** steps is GET /v1/runs/{id}/steps: up to `limit` steps (500) from seq `from` (0). */
  async steps(runId, { from, limit, signal } = {}) {
    return (await this.#call("GET", runPath(runId, "/steps"), { query: { from, limit }, signal })).steps;
  }

  /** allSteps yields every step of the run from seq `from`, a page at a time. */
  async *allSteps(runId, { from = 0, limit = 500, signal } = {}) {
    for (;;) {
      const page = await this.steps(runId, { from, limit, signal });
      yield* page;
      if (page.length < limit) return;
      from = page[page.length - 1].seq + 1;
    }
  }

  /** stepRequest is GET /v1/runs/{id}/steps/{seq}/request: what step seq's model call sent. */
  stepRequest(runId, seq, options = {}) {
    return this.#call("GET", runPath(runId, `/steps/${encodeURIComponent(seq)}/request`), options);
  }

  /**
   * messages is GET /v1/runs/{id}/messages: a page of the run's
   * conversation from index `from`; the next page's `from` is `next_from`,
   * absent on the last.
   */
  messages(runId, { from, limit, signal } = {}) {
    return this.#call("GET", runPath(runId, "/messages"), { query: { from, limit }, signal });
  }

  /** allMessages yields the run's whole conversation, a page at a time. */
  async *allMessages(runId, { from, limit, signal } = {}) {
    for (;;) {
      const page = await this.messages(runId, { from, limit, signal });
      yield* page.messages;
      if (page.next_from == null) return;
      from = page.next_from;
    }
  }

  /**
   * postResults is POST /v1/runs/{id}/results: the answers to the calls a
   * paused run waits for ({tool_call_id, result | error | not_run}), with an
   * Idempotency-Key its retries reuse.
   */
  postResults(runId, answers, { idempotencyKey, signal } = {}) {
    return this.#call("POST", runPath(runId, "/results"), {
      body: answers,
      key: idempotencyKey ?? newIdempotencyKey(),
      signal,
    });
  }

  /**
   * sendMessage is POST /v1/runs/{id}/messages: the user's next message,
   * with an Idempotency-Key its retries reuse, so it is posted once. The
   * answer is the run as it stands (running again when it had completed);
   * say waits for the turn's answer too.
   */
  sendMessage(runId, content, { idempotencyKey, signal } = {}) {
    return this.#call("POST", runPath(runId, "/messages"), {
      body: { content },
      key: idempotencyKey ?? newIdempotencyKey(),
      signal,
    });
  }

  /** resume is POST /v1/runs/{id}/resume: an interrupted or stalled run made runnable, driven by `agent` when given. */
  resume(runId, { agent, takeOver, signal } = {}) {
    return this.#call("POST", runPath(runId, "/resume"), { body: omitUndefined({ agent, take_over: takeOver }), retry: REFUSED, signal });
  }

  /** cancel is POST /v1/runs/{id}/cancel: the run ends cancelled. */
  cancel(runId, { reason, takeOver, signal } = {}) {
    return this.#call("POST", runPath(runId, "/cancel"), { body: omitUndefined({ reason, take_over: takeOver }), retry: REFUSED, signal });
  }

  /**
   * fork is POST /v1/runs/{id}/fork: a new run from step `at`, whose request
   * gets `result` (answers) or `reply` ({text, tool_calls}), or is made
   * again; `agent` drives it instead of the run's.
   */
  fork(runId, { at, result, reply, agent, signal } = {}) {
    return this.#call("POST", runPath(runId, "/fork"), { body: omitUndefined({ at, result, reply, agent }), retry: REFUSED, signal });
  }

  /** replay is POST /v1/runs/{id}/replay: the run re-driven with no model or tool called, and where it diverges. */
  replay(runId, { agent, signal } = {}) {
    return this.#call("POST", runPath(runId, "/replay"), { body: omitUndefined({ agent }), retry: SAFE, signal });
  }

  /**
   * events is GET /v1/runs/{id}/events as an async iterator of
   * {event, id, data} (data parsed): "step" (id its seq), "run", "message",
   * the live "calling", "delta", "retry" and "progress", and "end", after
   * which it returns. A dropped or silent connection is reopened with
   * Last-Event-ID, so no step is lost or repeated; a "message" event the
   * server sends again after a reconnect is not yielded twice. Give
   * `lastEventId` to start after that step. Breaking out of the loop, or
   * `signal`, closes the stream.
   */
  async *events(runId, { lastEventId, signal } = {}) {
    let last = lastEventId == null ? undefined : String(lastEventId);
    let lastMessage = -1;
    let failures = 0;
    let why;
    for (;;) {
      signal?.throwIfAborted();
      if (failures > 0) {
        if (failures > this.#retries) {
          throw why instanceof StepwiseError ? why : new StepwiseError(0, "network", `the event stream of ${runId}: ${messageOf(why)}`, { cause: why });
        }
        await sleep(this.#delay(failures - 1, why?.retryAfter), signal);
      }
      const ctrl = new AbortController();
      const unlink = link(signal, ctrl);
      let timer;
      const idle = () => {
        clearTimeout(timer);
        timer = setTimeout(() => ctrl.abort(new Error(`no data for ${this.#idleTimeout} ms`)), this.#idleTimeout);
      };
      let yielded = false;
      try {
        idle();
        const headers = this.#headers({ Accept: "text/event-stream" });
        if (last !== undefined) headers["Last-Event-ID"] = last;
        let resp;
        try {
          resp = await this.#fetch(this.#url + runPath(runId, "/events"), { headers, signal: ctrl.signal });
        } catch (err) {
          if (signal?.aborted) throw signal.reason;
          why = ctrl.signal.aborted ? ctrl.signal.reason : err;
          failures++;
          continue;
        }
        if (!resp.ok) {
          const err = await errorOf(resp);
          if (!retryable(err, SAFE)) throw err;
          why = err;
          failures++;
          continue;
        }
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        const parser = new SSEParser();
        for (;;) {
          let chunk;
          try {
            chunk = await reader.read();
          } catch (err) {
            if (signal?.aborted) throw signal.reason;
            why = ctrl.signal.aborted ? ctrl.signal.reason : err;
            break;
          }
          if (chunk.done) {
            why = new Error("the server closed the stream before its end");
            break;
          }
          idle();
          for (const raw of parser.push(decoder.decode(chunk.value, { stream: true }))) {
            if (raw.event === "error") {
              why = new StepwiseError(0, "network", `the event stream of ${runId}: the server: ${raw.data}`);
              continue;
            }
            const ev = { event: raw.event, id: raw.id, data: parseData(raw.data) };
            if (ev.event === "message" && typeof ev.data?.seq === "number") {
              if (ev.data.seq <= lastMessage) continue; // sent again after a reconnect
              lastMessage = ev.data.seq;
            }
            if (raw.id !== undefined) last = raw.id;
            yielded = true;
            clearTimeout(timer); // the consumer's time (a tool drive runs) is not silence
            yield ev;
            if (ev.event === "end") return;
            idle();
          }
        }
        // A connection that gave events is reopened after the first delay;
        // one that gave none counts towards the retries.
        failures = yielded ? 1 : failures + 1;
      } finally {
        clearTimeout(timer);
        unlink();
        ctrl.abort();
      }
    }
  }

  /**
   * drive follows the run's events and answers each external call it
   * pauses for with `tools[call.name](call.arguments, call)`: what the
   * function returns (a string, or any JSON value) is the call's result,
   * what it throws the call's error, which the model reads; a call with no
   * function gets an error saying so. It resolves to the run once the run
   * ended (completed, failed or cancelled).
   */
  drive(runId, { tools = {}, lastEventId, signal } = {}) {
    return this.#follow(runId, lastEventId, tools, signal);
  }

  /**
   * say sends the user's next message and resolves to the run once the
   * turn it begins ended: its answer is `run.answer` (status "completed"),
   * or the run failed or was cancelled. A run that pauses for external
   * calls meanwhile is answered from `tools`, as drive does; without
   * `tools` say resolves to the paused run.
   */
  async say(runId, content, { tools, idempotencyKey, signal } = {}) {
    const before = await this.getRun(runId, { signal });
    await this.sendMessage(runId, content, { idempotencyKey, signal });
    return this.#follow(runId, String(before.steps), tools ?? null, signal);
  }

  async #follow(runId, lastEventId, tools, signal) {
    const answered = new Set();
    for await (const ev of this.events(runId, { lastEventId, signal })) {
      const run = ev.data;
      if (ev.event !== "run" || run.status !== "awaiting_tool_results" || !run.pending_tool_calls?.length) continue;
      if (!tools) return run;
      const pause = (c) => `${run.steps} ${c.id}`; // a call id may come again at a later pause
      const calls = run.pending_tool_calls.filter((c) => !answered.has(pause(c)));
      if (calls.length === 0) continue;
      const answers = await Promise.all(calls.map((c) => answerOf(c, tools)));
      try {
        await this.postResults(runId, answers, { signal });
      } catch (err) {
        // Another client answered first: the run goes on all the same.
        if (!(err instanceof StepwiseError && (err.code === "already_answered" || err.code === "not_paused"))) throw err;
      }
      for (const c of calls) answered.add(pause(c));
    }
    return this.getRun(runId, { signal });
  }

  #headers(extra) {
    const h = { ...extra };
    if (this.#token) h.Authorization = `Bearer ${this.#token}`;
    return h;
  }

  #delay(attempt, retryAfter) {
    const backoff = this.#retryDelay * 2 ** attempt;
    return Math.min(retryAfter ?? backoff, this.#maxRetryDelay);
  }

  // call sends one request, again after a transient failure as its retry
  // policy allows (SAFE for a GET and a POST with a key), and returns the
  // answer's JSON or throws a StepwiseError.
  async #call(method, path, { query, body, key, retry, signal, timeout } = {}) {
    retry ??= method === "GET" || key ? SAFE : REFUSED;
    let url = this.#url + path;
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) q.set(k, String(v));
    if ([...q.keys()].length > 0) url += "?" + q;
    const headers = this.#headers({ Accept: "application/json" });
    let payload;
    if (method === "POST") {
      headers["Content-Type"] = "application/json"; // every POST needs it, even with an empty body
      payload = JSON.stringify(body ?? {});
    }
    if (key) headers["Idempotency-Key"] = key;
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const ctrl = new AbortController();
      const unlink = link(signal, ctrl);
      const limit = timeout ?? this.#timeout;
      const timer = setTimeout(() => ctrl.abort(new Error(`no answer within ${limit} ms`)), limit);
      let err;
      try {
        const resp = await this.#fetch(url, { method, headers, body: payload, signal: ctrl.signal });
        if (resp.ok) {
          const text = await resp.text();
          try {
            return text === "" ? null : JSON.parse(text);
          } catch {
            throw new StepwiseError(resp.status, "unexpected_response", `${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`);
          }
        }
        err = await errorOf(resp);
      } catch (e) {
        if (e instanceof StepwiseError) throw e;
        if (signal?.aborted) throw signal.reason;
        const cause = ctrl.signal.aborted ? ctrl.signal.reason : e;
        err = new StepwiseError(0, "network", `${method} ${path}: ${messageOf(cause)}`, { cause });
      } finally {
        clearTimeout(timer);
        unlink();
      }
      if (!retryable(err, retry) || attempt >= this.#retries) throw err;
      await sleep(this.#delay(attempt, err.retryAfter), signal);
    }
  }
}

/** newIdempotencyKey draws a key for the Idempotency-Key header. */
export function newIdempotencyKey() {
  const c = globalThis.crypto;
  if (c?.randomUUID) return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c?.getRandomValues) c.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function retryable(err, policy) {
  if (err.status === 429) return true;
  if (policy !== SAFE) return false;
  return err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504 || err.code === "in_progress";
}

// answerOf answers one call from the tools.
async function answerOf(call, tools) {
  const fn = Object.hasOwn(tools, call.name) ? tools[call.name] : undefined;
  if (typeof fn !== "function") return { tool_call_id: call.id, error: `this client has no tool ${call.name}` };
  try {
    const out = await fn(call.arguments ?? {}, call);
    return { tool_call_id: call.id, result: out === undefined ? "" : out };
  } catch (err) {
    return { tool_call_id: call.id, error: messageOf(err) || `${call.name} failed` };
  }
}

function runPath(runId, rest = "") {
  return `/v1/runs/${encodeURIComponent(runId)}${rest}`;
}

function omitUndefined(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

function parseData(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function messageOf(err) {
  return err instanceof Error ? err.message : String(err ?? "");
}

// waitMillis reads a wait option, a Go duration ("10s", "1m30s"), as
// milliseconds; 5 minutes, the most the server waits, when unreadable.
function waitMillis(wait) {
  if (wait === undefined || wait === "") return 0;
  const unit = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let ms = 0;
  const text = String(wait);
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/y;
  let m;
  while ((m = re.exec(text))) ms += Number(m[1]) * unit[m[2]];
  return ms > 0 ? Math.ceil(ms) : 300_000;
}

// link aborts ctrl when signal aborts; it returns the function that unlinks them.
function link(signal, ctrl) {
  if (!signal) return () => {};
  if (signal.aborted) {
    ctrl.abort(signal.reason);
    return () => {};
  }
  const onAbort = () => ctrl.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
