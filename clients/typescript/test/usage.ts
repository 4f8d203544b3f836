// usage.ts is never run: the type check (tsc -p tsconfig.json, run by
// TestTypeScriptClient when typescript is installed) compiles it against
// src/index.d.ts, so the declarations stay usable the way the README uses them.

import { Client, StepwiseError, newIdempotencyKey } from "../src/index.js";
import type { ErrorCode, Run, RunEvent, Step, Status, ChatMessage, Answer, InDoubt, ErrorBody } from "../src/index.js";

export async function usage(url: string): Promise<string> {
  const client = new Client(url, { token: "t", retries: 2, fetch });
  const run: Run = await client.createRun({ agent: "external", input: "Buy a desk lamp", idempotencyKey: newIdempotencyKey() });
  const done = await client.drive(run.id, {
    tools: { approve_purchase: async ({ amount_eur }) => (Number(amount_eur) <= 100 ? "approved" : { refused: true }) },
  });
  const status: Status = done.status;
  const history: ChatMessage[] = [{ role: "user", content: "Hi" }];
  const chat = await client.createRun({ agent: "chat", messages: history, wait: "10s" });
  const turn = await client.say(chat.id, "How much is the desk lamp?");
  for await (const ev of client.events(run.id, { lastEventId: 3 })) {
    const e: RunEvent = ev;
    if (e.event === "step") {
      const step: Step = e.data;
      console.log(step.seq, step.action?.describe, e.id.length);
    } else if (e.event === "delta") {
      console.log(e.data.part, e.data.text);
    } else if (e.event === "message") {
      console.log(e.data.seq, e.data.content);
    }
  }
  const page = await client.listRuns({ status: "completed", limit: 10 });
  for await (const r of client.allRuns({ agent: "chat" })) console.log(r.turns);
  for await (const m of client.allMessages(chat.id, { limit: 2 })) console.log(m.index, m.role);
  const answers: Answer[] = [{ tool_call_id: "c1", result: { ok: true } }, { tool_call_id: "c2", not_run: true }];
  await client.postResults(run.id, answers, { idempotencyKey: "k" });
  const doubt: InDoubt[] = done.in_doubt_calls ?? [];
  const forked = await client.fork(run.id, { at: 2, reply: { text: "hi" } });
  const report = await client.replay(forked.id, { agent: "external" });
  await client.cancel(chat.id, { reason: "done" });
  await client.resume(run.id, { takeOver: true });
  const req = await client.stepRequest(run.id, 1);
  const agents: string[] = await client.listAgents();
  const steps: Step[] = await client.steps(run.id, { from: 1, limit: 5 });
  try {
    await client.getRun("nope");
  } catch (err) {
    if (err instanceof StepwiseError) {
      const code: ErrorCode | "network" | "unexpected_response" = err.code;
      console.log(err.status, code, err.message, err.retryAfter);
    }
  }
  const body: ErrorBody = { error: { code: "ended", message: "the run has ended" } };
  console.log(status, turn.answer, page.next_cursor, doubt.length, report.identical, req.provider, agents, steps, body, (await client.health()).status);
  return done.answer ?? "";
}
