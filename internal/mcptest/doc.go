// Package mcptest is a small MCP server for tests, built with the official Go
// SDK: tools that succeed, fail (isError), sleep past a timeout (honouring
// cancellation, which cancellations counts), get stuck (ignoring
// cancellation and wedging the server), crash the server, send progress,
// change the tool list, ask for the client's roots, return structured
// content under an output schema, images and sound, and use schemas that
// need normalizing. It pages its tool list in small pages so clients must
// follow cursors.
//
// NewServer serves it in-process (for example over mcp.NewInMemoryTransports
// or an mcp.StreamableHTTPHandler); cmd/mcptestserver serves it over stdio.
package mcptest
