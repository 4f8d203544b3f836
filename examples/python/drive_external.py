#!/usr/bin/env python3
"""Drive a stepwise run whose agent calls external tools, over HTTP.

Standard library only. Start a server first, for example from the
repository's root:

    bin/stepwise serve --agents testdata/agents

then:

    python3 examples/python/drive_external.py --agent external --input "Buy a desk lamp"

The script creates the run, follows its event stream (Server-Sent Events,
resuming with Last-Event-ID if the connection drops), and whenever the run
pauses for external tool calls it answers them: here with a tiny policy
(approve purchases up to --budget euros), standing in for your program's
own tools. It exits 0 when the run completes, 1 when it fails or is
cancelled, 2 on a usage or HTTP error.
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request


class API:
    def __init__(self, base, token=None):
        self.base = base.rstrip("/")
        self.token = token

    def request(self, method, path, body=None, headers=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        return urllib.request.urlopen(req, timeout=timeout)

    def json(self, method, path, body=None):
        try:
            with self.request(method, path, body) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as e:
            err = json.load(e).get("error", {})
            raise APIError(e.code, err.get("code", "?"), err.get("message", "")) from None


class APIError(Exception):
    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


def events(api, run_id, after=None):
    """Yield (event, data) from the run's stream, reconnecting as needed."""
    last = after
    while True:
        headers = {"Accept": "text/event-stream"}
        if last is not None:
            headers["Last-Event-ID"] = str(last)
        try:
            with api.request("GET", f"/v1/runs/{run_id}/events", headers=headers, timeout=60) as resp:
                event, ident, data = None, None, []
                for raw in resp:
                    line = raw.decode().rstrip("\n")
                    if line.startswith(":"):
                        continue  # a keep-alive comment
                    if line == "":
                        if event:
                            if ident is not None:
                                last = ident
                            yield event, json.loads("\n".join(data) or "null")
                            if event == "end":
                                return
                        event, ident, data = None, None, []
                    elif line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("id: "):
                        ident = line[4:]
                    elif line.startswith("data: "):
                        data.append(line[6:])
        except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
            print(f"stream interrupted ({e}); resuming after step {last}", file=sys.stderr)
            time.sleep(1)


def answer(call, budget):
    """Your program's tool: here, approve purchases within the budget."""
    args = call["arguments"]
    if call["name"] == "approve_purchase":
        amount = float(args.get("amount_eur", 0))
        if amount <= budget:
            return {"tool_call_id": call["id"], "result": f"approved ({amount:.2f} EUR)"}
        return {"tool_call_id": call["id"], "error": f"over the budget of {budget:.2f} EUR"}
    return {"tool_call_id": call["id"], "error": f"this client has no tool {call['name']}"}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("STEPWISE_URL", "http://127.0.0.1:8080"))
    p.add_argument("--token", default=os.environ.get("STEPWISE_TOKEN"))
    p.add_argument("--agent", required=True, help="an agent's name in the server's agents directory")
    p.add_argument("--input", required=True)
    p.add_argument("--budget", type=float, default=100.0)
    a = p.parse_args()
    api = API(a.url, a.token)
    try:
        run = api.json("POST", "/v1/runs", {"agent": a.agent, "input": a.input})
        print(f"run {run['id']}: {run['status']}", file=sys.stderr)
        answered = set()
        for event, data in events(api, run["id"]):
            if event == "step":
                action = data.get("action") or {}
                print(f"  step {data['seq']}: {action.get('describe', 'start')}", file=sys.stderr)
            elif event == "run":
                run = data
                pending = [c for c in run.get("pending_tool_calls", []) if c["id"] not in answered]
                if run["status"] == "awaiting_tool_results" and pending:
                    results = [answer(c, a.budget) for c in pending]
                    try:
                        api.json("POST", f"/v1/runs/{run['id']}/results", results)
                    except APIError as e:
                        if e.code != "already_answered":  # someone else answered first
                            raise
                    answered.update(c["id"] for c in pending)
                    print(f"  answered {', '.join(r['tool_call_id'] for r in results)}", file=sys.stderr)
        run = api.json("GET", f"/v1/runs/{run['id']}")
    except APIError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except urllib.error.URLError as e:
        print(f"error: cannot reach {a.url}: {e.reason}", file=sys.stderr)
        return 2
    if run["status"] == "completed":
        print(run["answer"])
        return 0
    failure = run.get("failure") or {}
    print(f"run {run['status']}: {failure.get('reason', '')}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
