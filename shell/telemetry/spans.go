package telemetry

import (
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Span is one span of a run's trace, as stepwise builds it from a run
// (live or stored) before it is emitted or written.
type Span struct {
	TraceID trace.TraceID
	SpanID  trace.SpanID
	// Parent is the parent span's id; invalid for the run's root span.
	Parent     trace.SpanID
	Name       string
	Kind       trace.SpanKind
	Start, End time.Time
	// Attributes, in the order the span is built with.
	Attributes []attribute.KeyValue
	// Status is Unset or Error (with StatusMessage).
	Status        codes.Code
	StatusMessage string
	// Links: a fork's root span links to the root of the run it was
	// forked from.
	Links []trace.SpanContext
}

// Attribute keys: the GenAI semantic conventions' (and the general
// error.type, server.*), then stepwise's own.
const (
	keyOperation        = "gen_ai.operation.name"
	keyProvider         = "gen_ai.provider.name"
	keyAgentName        = "gen_ai.agent.name"
	keyConversation     = "gen_ai.conversation.id"
	keyRequestModel     = "gen_ai.request.model"
	keyInputTokens      = "gen_ai.usage.input_tokens"
	keyOutputTokens     = "gen_ai.usage.output_tokens"
	keyFinishReasons    = "gen_ai.response.finish_reasons"
	keyToolName         = "gen_ai.tool.name"
	keyToolCallID       = "gen_ai.tool.call.id"
	keyToolType         = "gen_ai.tool.type"
	keyToolDescription  = "gen_ai.tool.description"
	keyDataSource       = "gen_ai.data_source.id"
	keyInputMessages    = "gen_ai.input.messages"
	keyOutputMessages   = "gen_ai.output.messages"
	keySystem           = "gen_ai.system_instructions"
	keyToolArguments    = "gen_ai.tool.call.arguments"
	keyToolResult       = "gen_ai.tool.call.result"
	keyRetrievalQuery   = "gen_ai.retrieval.query.text"
	keyErrorType        = "error.type"
	keyServerAddress    = "server.address"
	keyServerPort       = "server.port"
	keyStep             = "stepwise.step"
	keyModelRole        = "stepwise.model.role"
	keyRunStatus        = "stepwise.run.status"
	keyRunSteps         = "stepwise.run.steps"
	keyParentRun        = "stepwise.run.parent_id"
	keyToolMode         = "stepwise.tool.mode"
	operationInvoke     = "invoke_agent"
	operationChat       = "chat"
	operationExecute    = "execute_tool"
	operationRetrieval  = "retrieval"
	errorOther          = "_OTHER"
	maxStatusMessageLen = 512
)

// builder builds the spans of one run, following one agent.
type builder struct {
	runID   string
	agent   agentInfo
	content bool
}

func (b builder) span(id, parent trace.SpanID, name string, kind trace.SpanKind, start, end time.Time) Span {
	return Span{TraceID: TraceID(b.runID), SpanID: id, Parent: parent, Name: name, Kind: kind, Start: start, End: end}
}

// root is the run's invoke_agent span, from its creation to its last
// step (end), with the run's totals.
func (b builder) root(info store.RunInfo, last core.State, end time.Time) Span {
	s := b.span(RunSpanID(b.runID), trace.SpanID{}, strings.TrimSpace(operationInvoke+" "+b.agent.name), trace.SpanKindInternal, info.Created, end)
	m := b.agent.model(core.Primary)
	s.Attributes = append(s.Attributes,
		attribute.String(keyOperation, operationInvoke),
		attribute.String(keyProvider, m.provider),
		attribute.String(keyAgentName, b.agent.name),
		attribute.String(keyConversation, b.runID))
	if m.model != "" {
		s.Attributes = append(s.Attributes, attribute.String(keyRequestModel, m.model))
	}
	s.Attributes = usage(s.Attributes, core.Usage{PromptTokens: last.Counters.PromptTokens, CompletionTokens: last.Counters.CompletionTokens})
	s.Attributes = append(s.Attributes,
		attribute.String(keyRunStatus, string(info.Status)),
		attribute.Int(keyRunSteps, info.LastSeq))
	if info.ParentID != "" {
		s.Attributes = append(s.Attributes, attribute.String(keyParentRun, info.ParentID))
		s.Links = append(s.Links, trace.NewSpanContext(trace.SpanContextConfig{TraceID: TraceID(info.ParentID), SpanID: RunSpanID(info.ParentID)}))
	}
	if b.content {
		s.Attributes = append(s.Attributes, attribute.String(keyInputMessages, textMessage("user", info.Input, "")))
		if info.Status == store.StatusCompleted {
			s.Attributes = append(s.Attributes, attribute.String(keyOutputMessages, textMessage("assistant", info.Answer, "stop")))
		}
	}
	if info.Status == store.StatusFailed || info.Status == store.StatusCancelled {
		b.fail(&s, string(info.FailCode), info.Reason)
	}
	return s
}

// chat is the span of the model call step seq requested.
func (b builder) chat(seq int, req core.RequestModelCall, reply core.ModelReply, start, end time.Time) Span {
	m := b.agent.model(req.Role)
	name := operationChat
	if m.model != "" {
		name += " " + m.model
	}
	s := b.span(StepSpanID(b.runID, seq), RunSpanID(b.runID), name, trace.SpanKindClient, start, end)
	s.Attributes = append(s.Attributes,
		attribute.String(keyOperation, operationChat),
		attribute.String(keyProvider, m.provider))
	if m.model != "" {
		s.Attributes = append(s.Attributes, attribute.String(keyRequestModel, m.model))
	}
	if m.address != "" {
		s.Attributes = append(s.Attributes, attribute.String(keyServerAddress, m.address), attribute.Int(keyServerPort, m.port))
	}
	s.Attributes = append(s.Attributes, attribute.String(keyConversation, b.runID))
	s.Attributes = usage(s.Attributes, reply.Usage)
	if reply.FinishReason != "" {
		s.Attributes = append(s.Attributes, attribute.StringSlice(keyFinishReasons, []string{reply.FinishReason}))
	}
	s.Attributes = append(s.Attributes, attribute.Int(keyStep, seq), attribute.String(keyModelRole, string(req.Role)))
	if b.content {
		system, input := inputMessages(req.Messages)
		if system != "" {
			s.Attributes = append(s.Attributes, attribute.String(keySystem, system))
		}
		if input != "" {
			s.Attributes = append(s.Attributes, attribute.String(keyInputMessages, input))
		}
		if reply.Error == "" {
			s.Attributes = append(s.Attributes, attribute.String(keyOutputMessages, outputMessages(reply)))
		}
	}
	if reply.Error != "" {
		b.fail(&s, errorOther, reply.Error)
	}
	return s
}

// usage appends the token counts, unless the model reported none.
func usage(attrs []attribute.KeyValue, u core.Usage) []attribute.KeyValue {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return attrs
	}
	return append(attrs, attribute.Int(keyInputTokens, u.PromptTokens), attribute.Int(keyOutputTokens, u.CompletionTokens))
}

// tool is the execute_tool span of one call step seq requested; external
// calls are run by the caller that answers the paused run.
func (b builder) tool(seq int, call core.ToolCall, res core.ToolResult, external bool, start, end time.Time) Span {
	s := b.span(CallSpanID(b.runID, seq, call.ID), RunSpanID(b.runID), operationExecute+" "+call.Name, trace.SpanKindInternal, start, end)
	t, known := b.agent.tools[call.Name]
	mode := string(t.Mode)
	switch {
	case external:
		mode = string(core.ModeExternal)
	case mode == "":
		mode = string(core.ModeInternal)
	}
	// The conventions' tool types: a function runs on the caller's side,
	// an extension on the agent's.
	toolType := "extension"
	if external {
		toolType = "function"
	}
	s.Attributes = append(s.Attributes,
		attribute.String(keyOperation, operationExecute),
		attribute.String(keyToolName, call.Name),
		attribute.String(keyToolCallID, call.ID),
		attribute.String(keyToolType, toolType))
	if known && t.Description != "" {
		s.Attributes = append(s.Attributes, attribute.String(keyToolDescription, t.Description))
	}
	s.Attributes = append(s.Attributes, attribute.Int(keyStep, seq), attribute.String(keyToolMode, mode))
	if b.content {
		s.Attributes = append(s.Attributes, attribute.String(keyToolArguments, marshal(arguments(call.Args))))
		if !res.Failed() {
			s.Attributes = append(s.Attributes, attribute.String(keyToolResult, res.Output))
		}
	}
	if res.Failed() {
		b.fail(&s, errorOther, res.Error)
	}
	return s
}

// memory is the span of a memory request step seq made: an execute_tool
// span when the model called a memory tool, a retrieval span for the
// recall before the first model call.
func (b builder) memory(seq int, req core.Action, res core.Result, start, end time.Time) Span {
	call, ns, query := memoryCall(req)
	failure := memoryError(res)
	if call.ID != "" {
		var output string
		if failure == "" && b.content {
			output = marshal(res)
		}
		return b.tool(seq, call, core.ToolResult{CallID: call.ID, Output: output, Error: failure}, false, start, end)
	}
	s := b.span(StepSpanID(b.runID, seq), RunSpanID(b.runID), operationRetrieval+" "+ns, trace.SpanKindInternal, start, end)
	s.Attributes = append(s.Attributes,
		attribute.String(keyOperation, operationRetrieval),
		attribute.String(keyDataSource, ns),
		attribute.Int(keyStep, seq))
	if b.content {
		s.Attributes = append(s.Attributes, attribute.String(keyRetrievalQuery, query))
	}
	if failure != "" {
		b.fail(&s, errorOther, failure)
	}
	return s
}

// memoryCall is a memory request as the tool call the model made (no id
// for recall), with its namespace and, for a search, its query.
func memoryCall(a core.Action) (call core.ToolCall, ns, query string) {
	switch a := a.(type) {
	case core.RequestMemorySearch:
		args := marshal(map[string]any{"query": a.Query, "limit": a.Limit})
		return core.ToolCall{ID: a.CallID, Name: "memory_search", Args: []byte(args)}, a.Namespace, a.Query
	case core.RequestMemoryCreate:
		args := marshal(map[string]any{"entities": a.Entities, "relations": a.Relations})
		return core.ToolCall{ID: a.CallID, Name: "memory_create", Args: []byte(args)}, a.Namespace, ""
	case core.RequestMemoryTraverse:
		args := marshal(map[string]any{"from": a.From, "relation": a.Relation, "depth": a.Depth})
		return core.ToolCall{ID: a.CallID, Name: "memory_traverse", Args: []byte(args)}, a.Namespace, ""
	}
	return core.ToolCall{}, "", ""
}

func memoryError(res core.Result) string {
	switch r := res.(type) {
	case core.MemoryHits:
		return r.Error
	case core.MemoryCreated:
		return r.Error
	case core.MemoryTraversed:
		return r.Error
	}
	return ""
}

// fail marks s as ended in an error: error.type, and the status with the
// message on one line (cut short).
func (b builder) fail(s *Span, errType, message string) {
	if errType == "" {
		errType = errorOther
	}
	s.Attributes = append(s.Attributes, attribute.String(keyErrorType, errType))
	s.Status = codes.Error
	message = strings.Join(strings.Fields(message), " ")
	if len(message) > maxStatusMessageLen {
		cut := maxStatusMessageLen
		for cut > 0 && message[cut]&0xC0 == 0x80 {
			cut--
		}
		message = message[:cut] + "…"
	}
	s.StatusMessage = message
}
