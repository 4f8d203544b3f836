// Package shell is the imperative shell of stepwise: the only place that does
// I/O. A Runner drives the pure core:
//
//	Step -> checkpoint -> perform the action -> Resume -> Step -> checkpoint ...
//
// until the core completes, fails, or pauses for external tools. Every
// continuation state (and every tool-call intent) is durable in the Store
// before the model or tool is called and before a pause is reported.
//
// A program that embeds stepwise calls the Runner: Start, Submit (answer a
// pause), Resume, Fork and Cancel, each of which drives the run and returns
// its Outcome (see ExampleRunner_Submit). A server, whose workers claim
// runnable runs from the store, calls the Runner's Pool instead (Create,
// Answer, Requeue, Fork, Drive). Both honour the caller's context; the
// lease a drive holds is renewed with a deadline, and a drive whose lease
// expires unrenewed (the store hangs) stops with ErrLeaseLost. The
// processes that tools start cannot read the embedding program's
// environment (shell/tools hides it, unless tools.ExposeEnvironment opts
// out).
//
// Model providers (subpackage models/...) and tools (subpackage tools) plug in
// through the ModelProvider and Tool interfaces; a tool's failure is a
// core.ToolResult with Error set, which the model sees, never a Go error.
// A provider that is also a RequestRenderer renders the request it sends
// without sending it; RenderModelCall renders a recorded step's model
// call, numbered as the runner numbered it, so what the model saw at any
// step is derivable.
//
// Each tool is declared once: a Registry takes each internal tool (its
// Spec is its declaration; NewTool makes one of a Go function, its schema
// derived from the argument struct) and each external tool, and builds the
// Agent whose core config and implementations both come from it. A Runner
// refuses at start an agent whose declarations and implementations
// disagree (ErrToolDeclaration). ToolSettings add what a tool asks of the
// shell: a View of its run, an output schema its results must fit, and a
// CachePolicy (see docs/adr/0022-tool-registry-and-declarations.md).
package shell
