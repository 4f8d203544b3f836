#!/usr/bin/env python3
"""Hold a conversation with a stepwise run over HTTP, turn by turn.

Standard library only. Start a server first, for example from the
repository's root:

    bin/stepwise serve --agents testdata/agents

then:

    python3 examples/python/chat.py --agent chat --say "Hello" --say "How much is the desk lamp?"

or leave out --say and type the messages, one a line (end with an empty
line or end of input). A run is a conversation: the script starts a run on
the first message (or on a message history in the OpenAI chat format,
--history FILE), follows its event stream until the run answers (it
completes), prints the answer, and sends the next message with
POST /v1/runs/{id}/messages, which goes on with the same run; it then follows
the stream again from the last step it saw. --run ID goes on with a run
that answered before. Answers go to stdout, one a turn; progress to stderr.
It exits 0 once every message was answered, 1 when the run fails, is
cancelled or waits for external tool results (drive_external.py answers
those), 2 on a usage or HTTP error.
"""

import argparse
import json
import os
import sys
import urllib.error

sys.dont_write_bytecode = True  # no __pycache__ next to the examples
from drive_external import API, APIError, events  # noqa: E402 (the HTTP and event stream helpers)


def follow(api, run_id, after):
    """Follow the run's events after step `after` until the stream ends (the
    run answered, failed or was cancelled) or the run pauses for external
    tools. Returns the run and the last step seen."""
    for event, data in events(api, run_id, after):
        if event == "message":
            print(f"  step {data['seq']}: the run took the message", file=sys.stderr)
        elif event == "step":
            after = data["seq"]
            action = data.get("action") or {}
            if action.get("kind") in ("tools", "external"):
                print(f"  step {after}: {action['describe']}", file=sys.stderr)
        elif event == "run" and data["status"] == "awaiting_tool_results":
            return data, after
    return api.json("GET", f"/v1/runs/{run_id}"), after


def messages(a):
    """The messages to send: --say, else lines typed on stdin."""
    if a.say:
        yield from a.say
        return
    if sys.stdin.isatty():
        print("Type a message a line; an empty line ends.", file=sys.stderr)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip():
            return
        yield line


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=os.environ.get("STEPWISE_URL", "http://127.0.0.1:8080"))
    p.add_argument("--token", default=os.environ.get("STEPWISE_TOKEN"))
    p.add_argument("--agent", help="an agent's name in the server's agents directory (to start a run)")
    p.add_argument("--history", help="a JSON file of OpenAI-format messages to start the run from")
    p.add_argument("--run", help="go on with this run (it answered before) instead of starting one")
    p.add_argument("--say", action="append", help="a message to send (repeat for the next turns)")
    a = p.parse_args()
    if bool(a.run) == bool(a.agent):
        p.error("give --agent to start a run, or --run to go on with one")
    api = API(a.url, a.token)
    try:
        todo = messages(a)
        if a.run:
            run = api.json("GET", f"/v1/runs/{a.run}")
        else:
            if a.history:
                with open(a.history) as f:
                    body = {"agent": a.agent, "messages": json.load(f)}
            else:
                first = next(todo, None)
                if first is None:
                    p.error("no message to start with")
                print(f"you: {first}", file=sys.stderr)
                body = {"agent": a.agent, "input": first}
            run = api.json("POST", "/v1/runs", body)
            print(f"run {run['id']}: {run['status']}", file=sys.stderr)
            run, after = follow(api, run["id"], None)
            if run["status"] != "completed":
                return ended(run)
            print(run["answer"], flush=True)
        after = run["steps"]
        for text in todo:
            print(f"you: {text}", file=sys.stderr)
            try:
                run = api.json("POST", f"/v1/runs/{run['id']}/messages", {"content": text})
            except APIError as e:
                if e.code != "ended":
                    raise
                return ended(api.json("GET", f"/v1/runs/{run['id']}"))
            run, after = follow(api, run["id"], after)
            if run["status"] != "completed":
                return ended(run)
            print(run["answer"], flush=True)
    except APIError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except urllib.error.URLError as e:
        print(f"error: cannot reach {a.url}: {e.reason}", file=sys.stderr)
        return 2
    turns = run["turns"]
    print(f"run {run['id']}: {turns} turn{'' if turns == 1 else 's'} answered", file=sys.stderr)
    return 0


def ended(run):
    """Report a run that did not answer; exit status 1."""
    if run["status"] == "awaiting_tool_results":
        calls = ", ".join(c["name"] for c in run["pending_tool_calls"])
        print(f"run {run['id']} waits for external tool results ({calls}); drive_external.py answers those", file=sys.stderr)
        return 1
    failure = run.get("failure") or {}
    print(f"run {run['id']} {run['status']}: {failure.get('reason', '')}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
