// Helpers of the client's tests: the server under test, and a TCP proxy that
// cuts or stalls event streams on the way.

import net from "node:net";

/**
 * server is the URL of the `stepwise serve` under test (STEPWISE_URL, set by
 * TestTypeScriptClient in cmd/stepwise, serving testdata/agents), or a
 * skip reason when it is not set; test(name, {skip: server.skip}, ...).
 */
export const server = {
  url: process.env.STEPWISE_URL,
  skip: process.env.STEPWISE_URL ? false : "STEPWISE_URL is not set: run these tests through go test ./cmd/stepwise -run TestTypeScriptClient",
};

/** isError returns an assert.rejects check of a StepwiseError's status and code. */
export function isError(StepwiseError, status, code) {
  return (err) => {
    if (!(err instanceof StepwiseError)) throw err;
    if (err.status !== status || err.code !== code) {
      throw new Error(`want ${status} ${code}, got ${err.status} ${err.code}: ${err.message}`);
    }
    return true;
  };
}

/**
 * proxy starts a TCP proxy to target that passes everything through except
 * the answers to GET .../events: each of those is split into blocks (what
 * ends with a blank line: an event, a ping), and policy(block, n, memory)
 * decides for the n-th block of the connection (from 0): "pass" forwards it,
 * "after" forwards it and cuts the connection, "mid" forwards half of it
 * and cuts, "stall" forwards it and then nothing more while keeping the
 * connection open. memory is a Set shared by all connections. It returns
 * {url, stats: {streams, cuts, stalls}, close}.
 */
export async function proxy(target, policy) {
  const { hostname, port } = new URL(target);
  const stats = { streams: 0, cuts: 0, stalls: 0 };
  const memory = new Set();
  const sockets = new Set();
  const srv = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    // The state of the request under way on this connection.
    let mode = "pass"; // "pass", "head" (an events answer's headers awaited), "cut", "stalled"
    let blocks = 0;
    let pending = Buffer.alloc(0);
    const kill = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (d) => {
      const m = /^(GET|POST) (\S+)/.exec(d.toString("latin1", 0, Math.min(d.length, 300)));
      if (m) {
        mode = m[1] === "GET" && /\/events(\?|$)/.test(m[2]) ? "head" : "pass";
        blocks = 0;
        pending = Buffer.alloc(0);
      }
      upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (mode === "stalled") return;
      if (mode === "pass") return void client.write(d);
      pending = Buffer.concat([pending, d]);
      if (mode === "head") {
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        if (!/content-type: text\/event-stream/i.test(pending.toString("latin1", 0, end))) {
          mode = "pass"; // an error answer
          client.write(pending);
          return;
        }
        stats.streams++;
        mode = "cut";
      }
      for (;;) {
        const i = pending.indexOf("\n\n");
        if (i < 0) break;
        const block = pending.subarray(0, i + 2);
        pending = pending.subarray(i + 2);
        const verdict = policy(block.toString("utf8"), blocks++, memory);
        if (verdict === "mid") {
          client.write(block.subarray(0, Math.floor(block.length / 2)));
          stats.cuts++;
          return void client.end(kill);
        }
        client.write(block);
        if (verdict === "after") {
          stats.cuts++;
          return void client.end(kill);
        }
        if (verdict === "stall") {
          stats.stalls++;
          mode = "stalled";
          return;
        }
      }
      // What is left is only chunked framing (a size line, the last chunk):
      // pass it, so that an answer can end.
      if (/^[\r\n0-9a-fA-F]*$/.test(pending.toString("latin1"))) {
        client.write(pending);
        pending = Buffer.alloc(0);
      }
    });
    for (const s of [client, upstream]) {
      s.on("error", kill);
      s.on("close", () => {
        sockets.delete(s);
        kill();
      });
    }
  });
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    stats,
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => srv.close(resolve));
    },
  };
}

/** cutThird passes two blocks of each connection and cuts it in the middle of the third. */
export function cutThird(_block, n) {
  return n === 2 ? "mid" : "pass";
}

/** cutAfterMessage cuts a connection right after each message event, once per message. */
export function cutAfterMessage(block, _n, memory) {
  const m = /event: message\ndata: (.*)\n/.exec(block);
  if (!m || memory.has(m[1])) return "pass";
  memory.add(m[1]);
  return "after";
}
