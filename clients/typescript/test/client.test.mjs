// The client against a real `stepwise serve` (testdata/agents): a paused run
// driven to its end, a conversation turn by turn, the routes, and the
// API's error codes.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, StepwiseError } from "../src/index.js";
import { isError, server } from "./helpers.mjs";

const opts = { skip: server.skip, timeout: 60_000 };
const client = () => new Client(server.url);

test("drive answers a paused run's external call and the run completes", opts, async () => {
  const c = client();
  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  assert.equal(run.status, "awaiting_tool_results");
  assert.deepEqual(run.pending_tool_calls.map((call) => call.name), ["approve_purchase"]);
  const asked = [];
  const done = await c.drive(run.id, {
    tools: {
      approve_purchase: async (args, call) => {
        asked.push([call.id, args]);
        return args.amount_eur <= 100 ? `approved (${args.amount_eur} EUR)` : "refused";
      },
    },
  });
  assert.equal(done.status, "completed");
  assert.equal(done.answer, "Approved: I bought the desk lamp for 42.50 EUR.");
  assert.deepEqual(asked, [["call_approve", { item: "desk lamp", amount_eur: 42.5 }]]);
  const steps = await c.steps(run.id);
  assert.deepEqual(steps.map((s) => s.seq), [...Array(done.steps + 1).keys()]);
  assert.ok(steps.some((s) => s.result?.describe.includes("call_approve ok") && s.result.describe.includes("approved (42.5 EUR)")), JSON.stringify(steps));
});

test("drive starts on a running run; a tool's throw and a missing tool are errors the model reads", opts, async () => {
  const c = client();
  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp" });
  const done = await c.drive(run.id, {
    tools: {
      approve_purchase: () => {
        throw new Error("over the budget");
      },
    },
  });
  assert.equal(done.status, "completed");
  const steps = await c.steps(run.id);
  assert.ok(steps.some((s) => s.result?.describe.includes("over the budget")), JSON.stringify(steps.map((s) => s.result?.describe)));

  const other = await c.createRun({ agent: "external", input: "Buy a desk lamp" });
  assert.equal((await c.drive(other.id)).status, "completed");
  const described = (await c.steps(other.id)).map((s) => s.result?.describe ?? "").join("\n");
  assert.match(described, /this client has no tool approve_purchase/);
});

test("a three-turn conversation: say waits for each turn's answer", opts, async () => {
  const c = client();
  const run = await c.createRun({ agent: "chat", input: "Hello" });
  const first = await c.drive(run.id);
  assert.equal(first.answer, "Hello! I can look up office equipment prices.");
  const second = await c.say(run.id, "How much is the desk lamp?");
  assert.equal(second.status, "completed");
  assert.equal(second.answer, "The desk lamp costs 42.50 EUR.");
  const third = await c.say(run.id, "Thanks");
  assert.equal(third.answer, "You're welcome. Goodbye!");
  assert.equal(third.turns, 3);

  // The conversation, a page of two at a time.
  const page = await c.messages(run.id, { limit: 2 });
  assert.equal(page.messages.length, 2);
  assert.equal(page.next_from, 2);
  const all = [];
  for await (const m of c.allMessages(run.id, { limit: 2 })) all.push(m);
  assert.deepEqual(all.map((m) => m.index), [...all.keys()]);
  assert.deepEqual(all.filter((m) => m.role === "user").map((m) => m.content), ["Hello", "How much is the desk lamp?", "Thanks"]);
  assert.deepEqual(
    all.filter((m) => m.role === "assistant" && m.content).map((m) => m.content),
    ["Hello! I can look up office equipment prices.", "Let me check the price list.", "The desk lamp costs 42.50 EUR.", "You're welcome. Goodbye!"],
  );
  const whole = await c.messages(run.id);
  assert.equal(whole.next_from, undefined);
  assert.deepEqual(whole.messages, all);
});

test("a run from a message history", opts, async () => {
  const c = client();
  const run = await c.createRun({
    agent: "chat",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ],
    wait: "10s",
  });
  assert.equal(run.status, "completed");
  assert.equal(run.answer, "Hello! I can look up office equipment prices.");
  assert.equal(run.turns, 1);
});

test("the other routes: health, openapi, agents, lists, step request, fork, replay, resume, cancel", opts, async () => {
  const c = client();
  assert.deepEqual(await c.health(), { status: "ok" });
  assert.equal((await c.openapi()).openapi, "3.1.0");
  const agents = await c.listAgents();
  assert.ok(agents.includes("external") && agents.includes("chat"), agents.join(" "));

  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  const done = await c.drive(run.id, { tools: { approve_purchase: () => "approved" } });
  assert.equal((await c.getRun(run.id)).answer, done.answer);

  const page = await c.listRuns({ agent: "shopper", limit: 1 });
  assert.equal(page.runs.length, 1);
  assert.ok(page.next_cursor, "a second page");
  const ids = [];
  for await (const r of c.allRuns({ agent: "shopper", limit: 2 })) ids.push(r.id);
  assert.ok(ids.includes(run.id) && new Set(ids).size === ids.length);
  assert.ok((await c.listRuns({ status: "completed" })).runs.every((r) => r.status === "completed"));

  const req = await c.stepRequest(run.id, 1);
  assert.equal(req.step, 1);
  assert.equal(req.provider, "script");

  // A fork at the pause, with another answer.
  const pause = (await c.steps(run.id)).find((s) => s.action?.calls?.some((call) => call.name === "approve_purchase"));
  const fork = await c.fork(run.id, { at: pause.seq, result: [{ tool_call_id: "call_approve", error: "refused" }] });
  assert.equal(fork.parent.id, run.id);
  const forkDone = await c.drive(fork.id);
  assert.equal(forkDone.status, "completed");
  assert.equal((await c.listRuns({ parent: run.id })).runs[0].id, fork.id);

  const report = await c.replay(run.id);
  assert.equal(report.identical, true);
  assert.equal(report.steps, done.steps);

  const resumed = await c.resume(run.id);
  assert.equal(resumed.status, "completed");

  const paused = await c.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  const cancelled = await c.cancel(paused.id, { reason: "not today" });
  assert.equal(cancelled.status, "cancelled");
});

test("errors carry the API's status and code, and a 4xx is not retried", opts, async () => {
  let sent = 0;
  const c = new Client(server.url, { fetch: (...args) => (sent++, fetch(...args)) });
  await assert.rejects(c.getRun("r-no-such-run"), isError(StepwiseError, 404, "not_found"));
  assert.equal(sent, 1);
  await assert.rejects(c.createRun({ agent: "no-such-agent", input: "hi" }), isError(StepwiseError, 404, "unknown_agent"));
  await assert.rejects(
    c.createRun({ agent: "chat", input: "hi", messages: [{ role: "user", content: "hi" }] }),
    isError(StepwiseError, 400, "bad_request"),
  );
  await assert.rejects(c.createRun({ agent: "chat", messages: [{ role: "assistant", content: "hi" }] }), isError(StepwiseError, 400, "invalid_history"));
  await assert.rejects(c.steps("r-no-such-run"), isError(StepwiseError, 404, "not_found"));

  const run = await c.createRun({ agent: "external", input: "Buy a desk lamp", wait: "10s" });
  await assert.rejects(c.postResults(run.id, [{ tool_call_id: "call_nope", result: "x" }]), isError(StepwiseError, 400, "invalid_results"));
  await assert.rejects(c.sendMessage(run.id, ""), isError(StepwiseError, 400, "bad_request"));
  await c.cancel(run.id);
  sent = 0;
  await assert.rejects(c.sendMessage(run.id, "one more thing"), (err) => {
    assert.ok(err instanceof StepwiseError);
    assert.equal(err.status, 409);
    assert.equal(err.code, "ended");
    assert.ok(err.message.length > 0);
    return true;
  });
  assert.equal(sent, 1);
  await assert.rejects(c.cancel(run.id), isError(StepwiseError, 409, "ended"));
  await assert.rejects(c.postResults(run.id, [{ tool_call_id: "call_approve", result: "x" }]), (err) => err instanceof StepwiseError && err.status === 409);
  // An event stream of an unknown run is an error, not a reconnect.
  await assert.rejects(async () => {
    for await (const _ of c.events("r-no-such-run")) assert.fail("an event");
  }, isError(StepwiseError, 404, "not_found"));
});
