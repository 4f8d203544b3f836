// Package shell is the imperative shell of stepwise: the only place that does
// I/O. A Runner drives the pure core:
//
//	Step -> checkpoint -> perform the action -> Resume -> Step -> checkpoint ...
//
// until the core completes, fails, or pauses for external tools. Every
// continuation state (and every tool-call intent) is durable in the Store
// before the model or tool is called and before a pause is reported.
//
// Model providers (subpackage models/...) and tools (subpackage tools) plug in
// through the ModelProvider and Tool interfaces; a tool's failure is a
// core.ToolResult with Error set, which the model sees, never a Go error.
package shell
