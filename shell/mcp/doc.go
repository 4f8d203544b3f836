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
// core cannot check is skipped with a warning, not a failed run.
//
// Failures are data: a result with isError, a JSON-RPC error response, a
// timeout, a server that exits or breaks the protocol all come back as a
// core.ToolResult with Error set. After a timeout or a broken connection the
// session is closed and the server is started again on the next call, at most
// ServerConfig.MaxRestarts times in the manager's lifetime; then its calls
// fail fast.
//
// Replays do not need the servers: record ToolSpecs(tools) with the run, and
// use Manager.Bind to get callable tools for recorded specs without listing.
package mcp
