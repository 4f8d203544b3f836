// Package mcp makes the tools of Model Context Protocol servers shell tools.
//
// A Manager owns the servers of one run. Servers start lazily, on the first
// call of Manager.Tools or of one of their tools, and Manager.Close shuts
// them all down: stdio servers get their stdin closed, then SIGTERM, then
// SIGKILL. On Linux a stdio server runs under a supervisor process (see
// tools.Supervise) that kills everything the server started when it stops
// or when the runner dies, even by SIGKILL, so no child outlives the run.
//
// Tool names: a server's tools are exposed as NAME__TOOL (ServerConfig.Name,
// two underscores, the server's own tool name), which is also a valid
// OpenAI function name. Server names are made of letters, digits, '-' and
// single '_' (never "__"), so the first "__" of a name splits it back.
//
// Schemas: each tool's input schema goes through NormalizeSchema, which
// inlines local $ref, merges allOf and drops annotations, so the core can
// check calls against it exactly as for other tools. A tool whose schema the
// core cannot check is skipped with a warning, not a failed run. A tool's
// output schema, when it declares one, is checked as it is (JSON Schema
// 2020-12, github.com/google/jsonschema-go): a result whose structured
// content does not fit it, or that has none, is the tool's error. The model
// reads a result's text; one without text reads as its structured content
// in JSON.
//
// Results: text parts are joined by newlines; other parts become notes. An
// image or a sound (at most ServerConfig.MaxAttachmentBytes) is also kept
// as a core.Attachment, which a model that accepts it receives.
//
// Failures are data: a result with isError, a JSON-RPC error response, a
// timeout, a server that exits or breaks the protocol all come back as a
// core.ToolResult with Error set. A call that times out is cancelled
// (notifications/cancelled): the server keeps its session if it then
// answers a ping within ServerConfig.CancelGrace, and is stopped otherwise.
// After a broken connection, or a server that does not honour a
// cancellation, the session is closed and the server is started again on
// the next call, at most ServerConfig.MaxRestarts times in the manager's
// lifetime; then its calls fail fast. An optional server
// (ServerConfig.Optional) is given up instead when it cannot start, or dies
// with no restarts left: its tools are withdrawn.
//
// The client declares the roots capability only for a server with
// ServerConfig.Roots. Calls carry a progress token when their RunContext
// has a Progress; the server's notifications/progress go there while the
// call runs (later ones are dropped).
//
// Tool lists change: when a server sends notifications/tools/list_changed,
// its tools are listed again in the background, and Version grows if the
// list differs; so does it when an optional server is given up. Current
// and Record then describe the new list.
//
// Replays do not need the servers: record Record() with the run, and use
// Manager.Bind to get callable tools for a recorded list without listing.
package mcp
