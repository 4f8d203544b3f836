// What of internal/server/openapi.json this client covers; a Go test
// (cmd/stepwise/clients_coverage_test.go) reads this file and fails naming
// every route or schema of the document that is neither covered nor listed
// as missing, every entry naming one the document no longer has, and every
// method named here that the Client class lacks. The Python client keeps the
// same three maps in clients/python/src/stepwise/_coverage.py.
//
// The format, which the Go test parses line by line: three flat maps from
// string to string, each opened by a line `export const NAME = {` and closed
// by a line `};` (or written `export const NAME = {};` when empty), with one
// entry a line, `"KEY": "VALUE",`, keys and values double-quoted on one line.
// Blank lines and // comments may come between entries.
//
// ROUTES: "METHOD /path" as the document writes it -> the Client method that
// calls the route.
// SCHEMAS: a schema of components.schemas -> its type in src/api-types.d.ts
// (generated from the document by scripts/gen-types.mjs).
// MISSING: a route or schema the client does not cover -> why.

export const ROUTES = {
  "POST /v1/runs": "createRun",
  "GET /v1/runs": "listRuns",
  "GET /v1/runs/{id}": "getRun",
  "GET /v1/runs/{id}/steps": "steps",
  "GET /v1/runs/{id}/steps/{seq}/request": "stepRequest",
  "POST /v1/runs/{id}/results": "postResults",
  "POST /v1/runs/{id}/messages": "sendMessage",
  "GET /v1/runs/{id}/messages": "messages",
  "POST /v1/runs/{id}/resume": "resume",
  "POST /v1/runs/{id}/cancel": "cancel",
  "POST /v1/runs/{id}/fork": "fork",
  "POST /v1/runs/{id}/replay": "replay",
  "GET /v1/runs/{id}/events": "events",
  "GET /v1/agents": "listAgents",
  "GET /openapi.json": "openapi",
  "GET /healthz": "health",
};

export const SCHEMAS = {
  "Error": "ErrorBody",
  "Status": "Status",
  "CreateRun": "CreateRun",
  "Call": "Call",
  "InDoubt": "InDoubt",
  "Holder": "Holder",
  "Counters": "Counters",
  "Usage": "Usage",
  "Run": "Run",
  "Child": "Child",
  "RunList": "RunList",
  "Message": "Message",
  "ChatMessage": "ChatMessage",
  "ConversationMessage": "ConversationMessage",
  "MessageList": "MessageList",
  "PostMessage": "PostMessage",
  "MessageEvent": "MessageEvent",
  "Step": "Step",
  "StepRequest": "StepRequest",
  "Answer": "Answer",
  "Fork": "Fork",
  "Replay": "Replay",
};

export const MISSING = {};
