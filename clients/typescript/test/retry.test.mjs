// Retries: a transient failure is retried, a POST that creates or answers
// something with the same Idempotency-Key, so the server does it once; a
// request whose repetition is unsafe is not retried after a lost answer.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, StepwiseError } from "../src/index.js";
import { isError, server } from "./helpers.mjs";

const opts = { skip: server.skip, timeout: 60_000 };

// faulty is a fetch that passes requests to the server, except that
// fault(method, path, n) may return what to do with the n-th request (from
// 0) to that method and path: "lose" sends it and loses the answer (a network
// error), a Response answers it instead of the server, a function of the
// server's Response replaces it. It records every request of the faulty
// routes: {method, path, key, replayed, status}.
function faulty(fault) {
  const sent = [];
  const counts = {};
  const f = async (url, init = {}) => {
    const method = init.method ?? "GET";
    const path = new URL(url).pathname;
    const n = (counts[`${method} ${path}`] = (counts[`${method} ${path}`] ?? 0) + 1) - 1;
    const what = fault(method, path, n);
    if (what === undefined) return fetch(url, init);
    const rec = { method, path, key: init.headers?.["Idempotency-Key"] };
    sent.push(rec);
    if (what instanceof Response) {
      rec.status = what.status;
      return what;
    }
    const resp = await fetch(url, init);
    rec.status = resp.status;
    rec.replayed = resp.headers.get("Idempotent-Replayed");
    if (what === "lose") {
      rec.body = await resp.json();
      throw new TypeError("fetch failed: the connection dropped before the answer");
    }
    return what(resp);
  };
  return { fetch: f, sent };
}

const apiError = (status, code, retryAfter) =>
  new Response(JSON.stringify({ error: { code, message: `a ${code} for the test` } }), {
    status,
    headers: { "Content-Type": "application/json", ...(retryAfter === undefined ? {} : { "Retry-After": retryAfter }) },
  });

test("POST /v1/runs whose answer is lost: the retry with the same key gets the same run", opts, async () => {
  const f = faulty((method, path, n) => (method === "POST" && path === "/v1/runs" ? (n === 0 ? "lose" : (r) => r) : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retryDelay: 5 });
  const run = await c.createRun({ agent: "chat", input: "Hello", wait: "10s" });
  assert.equal(f.sent.length, 2);
  const [first, retry] = f.sent;
  assert.ok(first.key && first.key === retry.key, `keys ${first.key} and ${retry.key}`);
  assert.equal(first.status, 201);
  assert.equal(retry.replayed, "true");
  assert.equal(run.id, first.body.id, "the retry's answer is the first request's run: no second run");
});

test("say whose message's answer is lost: the message is posted once", opts, async () => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "chat", input: "Hello" });
  await direct.drive(run.id);
  const f = faulty((method, path, n) => (method === "POST" && path.endsWith("/messages") ? (n === 0 ? "lose" : (r) => r) : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retryDelay: 5 });
  const done = await c.say(run.id, "How much is the desk lamp?", { idempotencyKey: "say-once-" + run.id });
  assert.equal(done.answer, "The desk lamp costs 42.50 EUR.");
  assert.equal(done.turns, 2);
  assert.deepEqual(f.sent.map((r) => [r.key, r.replayed]), [
    ["say-once-" + run.id, null],
    ["say-once-" + run.id, "true"],
  ]);
  const users = [];
  for await (const m of direct.allMessages(run.id)) if (m.role === "user") users.push(m.content);
  assert.deepEqual(users, ["Hello", "How much is the desk lamp?"]);
});

test("results: a 503, a 409 in_progress and a lost answer are retried with the same key", opts, async () => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  const faults = [apiError(503, "unavailable", "0"), apiError(409, "in_progress", "0"), "lose", (r) => r];
  const f = faulty((method, path, n) => (method === "POST" && path.endsWith("/results") ? faults[n] : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retryDelay: 5 });
  const answered = await c.postResults(run.id, [{ tool_call_id: "call_approve", result: "approved" }]);
  assert.notEqual(answered.status, "awaiting_tool_results");
  assert.deepEqual(f.sent.map((r) => r.status), [503, 409, 200, 200]);
  assert.equal(new Set(f.sent.map((r) => r.key)).size, 1);
  assert.equal(f.sent[3].replayed, "true");
  assert.equal((await direct.drive(run.id)).status, "completed");
});

test("429 waits for Retry-After; 502 and 504 are retried; a GET is retried after a network error", opts, async () => {
  const faults = [apiError(429, "too_many_streams", "1"), new Response("<html>bad gateway</html>", { status: 502 }), new Response("", { status: 504 }), "lose"];
  const f = faulty((method, path, n) => (path === "/healthz" ? (faults[n] ?? ((r) => r)) : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retryDelay: 5 });
  const start = Date.now();
  assert.deepEqual(await c.health(), { status: "ok" });
  assert.ok(Date.now() - start >= 950, `retried after ${Date.now() - start} ms, not after Retry-After: 1`);
  assert.deepEqual(f.sent.map((r) => r.status), [429, 502, 504, 200, 200]);
});

test("retries end: the last failure is thrown, with the same key on every try", opts, async () => {
  const f = faulty((method, path) => (path === "/v1/runs" ? new Response("<html>down</html>", { status: 502, statusText: "Bad Gateway" }) : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retries: 2, retryDelay: 5 });
  await assert.rejects(c.createRun({ agent: "chat", input: "Hello" }), isError(StepwiseError, 502, "unexpected_response"));
  assert.equal(f.sent.length, 3);
  assert.equal(new Set(f.sent.map((r) => r.key)).size, 1);

  const down = new Client("http://127.0.0.1:9", { retries: 1, retryDelay: 5 });
  await assert.rejects(down.getRun("r1"), isError(StepwiseError, 0, "network"));
});

test("fork, cancel and resume carry no key: a lost answer or a 503 is not retried", opts, async () => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  const f = faulty((method, path) => (method === "POST" && /\/(fork|cancel|resume)$/.test(path) ? (path.endsWith("/fork") ? "lose" : apiError(503, "unavailable", "0")) : undefined));
  const c = new Client(server.url, { fetch: f.fetch, retryDelay: 5 });
  await assert.rejects(c.fork(run.id, { at: 1 }), isError(StepwiseError, 0, "network"));
  await assert.rejects(c.cancel(run.id), isError(StepwiseError, 503, "unavailable"));
  await assert.rejects(c.resume(run.id), isError(StepwiseError, 503, "unavailable"));
  assert.deepEqual(f.sent.map((r) => r.path.split("/").pop()), ["fork", "cancel", "resume"]);
  await direct.cancel(run.id);
});
