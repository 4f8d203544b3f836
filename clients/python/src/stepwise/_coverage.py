"""What the client covers of the API, for tests to check against the
server's openapi.json (clients/python/tests/test_coverage.py here, and a Go
test of the repository's).

ROUTES maps each route ("METHOD /path", as openapi.json's paths spell it)
to the method that calls it, the same name on Client and AsyncClient.
SCHEMAS maps each schema of components.schemas to the name, in the
stepwise package, of the class that holds it. MISSING maps a route or a
schema that has no method or class of its own to the reason. Every route
and schema of openapi.json is in ROUTES, SCHEMAS or MISSING.
"""

ROUTES = {
    "POST /v1/runs": "create_run",
    "GET /v1/runs": "list_runs",
    "GET /v1/runs/{id}": "get_run",
    "GET /v1/runs/{id}/steps": "steps",
    "GET /v1/runs/{id}/steps/{seq}/request": "step_request",
    "POST /v1/runs/{id}/results": "post_results",
    "POST /v1/runs/{id}/messages": "send_message",
    "GET /v1/runs/{id}/messages": "messages",
    "POST /v1/runs/{id}/resume": "resume",
    "POST /v1/runs/{id}/cancel": "cancel",
    "POST /v1/runs/{id}/fork": "fork",
    "POST /v1/runs/{id}/replay": "replay",
    "GET /v1/runs/{id}/events": "iter_events",
    "GET /v1/agents": "list_agents",
    "GET /openapi.json": "openapi",
    "GET /healthz": "health",
}

# Other methods over the same routes: helpers and the long poll of the
# events route.
HELPERS = {
    "iter_runs": "GET /v1/runs",
    "iter_steps": "GET /v1/runs/{id}/steps",
    "iter_messages": "GET /v1/runs/{id}/messages",
    "poll_steps": "GET /v1/runs/{id}/events",
    "wait": "GET /v1/runs/{id}/events",
    "drive": "GET /v1/runs/{id}/events",
    "say": "POST /v1/runs/{id}/messages",
}

SCHEMAS = {
    "Error": "StepwiseError",
    "Status": "Status",
    "Call": "ToolCall",
    "InDoubt": "InDoubtCall",
    "Holder": "Holder",
    "Counters": "Counters",
    "Usage": "Usage",
    "Run": "Run",
    "Child": "Child",
    "RunList": "RunList",
    "Message": "StepMessage",
    "ChatMessage": "ChatMessage",
    "ConversationMessage": "Message",
    "MessageList": "MessageList",
    "MessageEvent": "MessageEvent",
    "Step": "Step",
    "StepRequest": "StepRequest",
    "Answer": "Answer",
    "Replay": "Replay",
}

MISSING = {
    "CreateRun": "a request body: create_run's parameters (agent, input, messages, wait as options.wait)",
    "PostMessage": "a request body: send_message's content",
    "Fork": "a request body: fork's parameters (at, result as Answers, reply, agent)",
}
