// Package telemetry traces runs with OpenTelemetry, following the GenAI
// semantic conventions: a run is one trace whose root is an invoke_agent
// span, with a chat span for each model call, an execute_tool span for
// each tool call (gen_ai.tool.call.id set) and a retrieval span for each
// memory recall; usage (gen_ai.usage.*) is on the chat spans and, as the
// run's totals, on the root. Message content (gen_ai.input.messages,
// gen_ai.output.messages, gen_ai.system_instructions, tool arguments and
// results) is recorded only when asked for (Options.Content,
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), and is the
// data as stored, with the agent's secrets already redacted.
//
// Ids are derived, never random (TraceID, RunSpanID, StepSpanID,
// CallSpanID): from the run id, the step's seq and the call id. A trace
// built from a stored run (ReadRun, Run.Spans) and the spans an Observer
// emits live while the run is driven have the same ids, names, tree and
// attributes; their times differ by what was measured: the live ones time
// each call, the stored ones run from the step that requested a call to
// the next step (or the call's journal entry). See docs/adr/0019.
//
// Live spans go through any trace.TracerProvider; an SDK provider made
// with NewTracerProvider (IDGenerator installed) gives them their derived
// span ids. ProviderFromEnv makes one from the standard OTEL_EXPORTER_OTLP_*
// variables, sending OTLP/HTTP protobuf with the official exporter.
// WriteJSON writes spans as OTLP/JSON; Send exports them at once.
//
// The package only observes: the core and the runner neither know nor
// wait for it, and a program that does not import it pays nothing.
package telemetry
