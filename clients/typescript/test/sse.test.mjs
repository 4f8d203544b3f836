// The Server-Sent Events parser, alone.

import assert from "node:assert/strict";
import { test } from "node:test";
import { SSEParser } from "../src/index.js";

test("events split anywhere across chunks, with LF, CRLF or CR line ends", () => {
  const text = 'id: 1\nevent: step\ndata: {"seq":1}\n\n: ping\n\r\nevent: run\r\ndata: {"a":\r\ndata: 2}\r\n\r\nid: 2.1\revent: delta\rdata:x\r\r';
  const want = [
    { event: "step", id: "1", data: '{"seq":1}' },
    { event: "run", id: undefined, data: '{"a":\n2}' },
    { event: "delta", id: "2.1", data: "x" },
  ];
  for (let size = 1; size <= text.length; size++) {
    const p = new SSEParser();
    const got = [];
    for (let i = 0; i < text.length; i += size) got.push(...p.push(text.slice(i, i + size)));
    assert.deepEqual(got, want, `chunks of ${size}`);
  }
});

test("an event the stream stops in the middle of is never dispatched", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push('id: 3\nevent: step\ndata: {"seq":3}\n\nid: 4\nevent: step\ndata: {"se'), [{ event: "step", id: "3", data: '{"seq":3}' }]);
});

test("an event with no data is not dispatched; no event name is message; unknown fields are ignored", () => {
  const p = new SSEParser();
  assert.deepEqual(p.push("event: nothing\n\nretry: 10\nfoo: bar\ndata\n\ndata: a\n\n"), [
    { event: "message", id: undefined, data: "" },
    { event: "message", id: undefined, data: "a" },
  ]);
});
