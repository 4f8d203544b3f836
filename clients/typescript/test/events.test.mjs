// The event stream through a proxy that cuts connections: the iterator
// reopens each with Last-Event-ID and yields every step once, in order.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client } from "../src/index.js";
import { cutAfterMessage, cutThird, proxy, server } from "./helpers.mjs";

const opts = { skip: server.skip, timeout: 60_000 };

// collect reads a run's whole stream.
async function collect(c, runId, options) {
  const out = [];
  for await (const ev of c.events(runId, options)) out.push(ev);
  return out;
}

// seqs are the seqs of the step events, in the order they came.
const seqs = (events) => events.filter((e) => e.event === "step").map((e) => e.data.seq);

test("a stream cut in the middle of every third event: every step once, in order", opts, async (t) => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "external", input: "Buy a desk lamp" });
  const done = await direct.drive(run.id, { tools: { approve_purchase: () => "approved" } });
  const p = await proxy(server.url, cutThird);
  t.after(() => p.close());
  const events = await collect(new Client(p.url, { retryDelay: 5 }), run.id);
  assert.deepEqual(seqs(events), [...Array(done.steps + 1).keys()]);
  assert.ok(p.stats.cuts >= 2, `the proxy cut ${p.stats.cuts} times`);
  assert.equal(events.at(-1).event, "end");
  for (const e of events.filter((e) => e.event === "step")) assert.equal(e.id, String(e.data.seq));
  // The same steps as GET /steps lists them.
  assert.deepEqual(events.filter((e) => e.event === "step").map((e) => e.data), await direct.steps(run.id));
});

test("lastEventId starts after that step", opts, async () => {
  const c = new Client(server.url);
  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp" });
  const done = await c.drive(run.id, { tools: { approve_purchase: () => "approved" } });
  const events = await collect(c, run.id, { lastEventId: 3 });
  assert.deepEqual(seqs(events), [...Array(done.steps + 1).keys()].slice(4));
});

test("drive through cut connections: the run is answered once and completes", opts, async (t) => {
  const p = await proxy(server.url, cutThird);
  t.after(() => p.close());
  const c = new Client(p.url, { retryDelay: 5 });
  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp" });
  let calls = 0;
  const done = await c.drive(run.id, { tools: { approve_purchase: () => (calls++, "approved") } });
  assert.equal(done.status, "completed");
  assert.equal(done.answer, "Approved: I bought the desk lamp for 42.50 EUR.");
  assert.equal(calls, 1);
  assert.ok(p.stats.cuts >= 1, `the proxy cut ${p.stats.cuts} times`);
});

test("a message event sent again after a cut is yielded once, before its step", opts, async (t) => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "chat", input: "Hello" });
  await direct.drive(run.id);
  await direct.say(run.id, "How much is the desk lamp?");
  const last = await direct.say(run.id, "Thanks");
  const p = await proxy(server.url, cutAfterMessage);
  t.after(() => p.close());
  const events = await collect(new Client(p.url, { retryDelay: 5 }), run.id);
  assert.equal(p.stats.cuts, 2, "a cut after each of the two message events");
  assert.deepEqual(seqs(events), [...Array(last.steps + 1).keys()]);
  const messages = events.filter((e) => e.event === "message");
  assert.deepEqual(messages.map((e) => e.data.content), ["How much is the desk lamp?", "Thanks"]);
  for (const m of messages) {
    const next = events[events.indexOf(m) + 1];
    assert.equal(next.event, "step");
    assert.equal(next.data.seq, m.data.seq);
    assert.equal(next.data.result.kind, "user_message");
  }
});

test("a silent connection is given up after idleTimeout and reopened", opts, async (t) => {
  const direct = new Client(server.url);
  const run = await direct.createRun({ agent: "external", input: "Buy a desk lamp" });
  const done = await direct.drive(run.id, { tools: { approve_purchase: () => "approved" } });
  // The first connection passes one event, then nothing while staying open.
  const p = await proxy(server.url, (_block, n, memory) => {
    if (n !== 0 || memory.has("stalled")) return "pass";
    memory.add("stalled");
    return "stall";
  });
  t.after(() => p.close());
  const events = await collect(new Client(p.url, { idleTimeout: 300, retryDelay: 5 }), run.id);
  assert.equal(p.stats.stalls, 1);
  assert.equal(p.stats.streams, 2);
  assert.deepEqual(seqs(events), [...Array(done.steps + 1).keys()]);
});

test("breaking out of the loop closes the stream; a signal aborts it", opts, async () => {
  const c = new Client(server.url);
  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  for await (const ev of c.events(run.id)) {
    assert.equal(ev.event, "step");
    break;
  }
  const ctrl = new AbortController();
  const seen = [];
  await assert.rejects(
    (async () => {
      for await (const ev of c.events(run.id, { signal: ctrl.signal })) {
        seen.push(ev.event);
        if (ev.event === "run") ctrl.abort(new Error("enough"));
      }
    })(),
    /enough/,
  );
  assert.equal(seen.at(-1), "run");
  await c.cancel(run.id);
});
