package core

import (
	"fmt"
	"strings"
)

// describeWidth is how many bytes of free text a one-line description keeps.
const describeWidth = 120

// DescribeAction renders an action as deterministic text for golden files,
// logs and the CLI.
func DescribeAction(a Action) string {
	switch a := a.(type) {
	case Complete:
		s := "complete " + quote(a.Answer)
		if len(a.ToolsUsed) > 0 {
			s += " tools_used=" + strings.Join(a.ToolsUsed, ",")
		}
		if len(a.Sources) > 0 {
			s += " sources=" + strings.Join(a.Sources, ",")
		}
		return s
	case Fail:
		return fmt.Sprintf("fail %s: %s", a.Code, a.Reason)
	case RequestModelCall:
		if c := a.State.Ctx; a.State.Phase == PhaseCompact && c != nil {
			// A summary: the history is compacted here (context.go).
			_, from := c.bounds(len(a.State.Messages))
			return fmt.Sprintf("compact %s summarize messages %d-%d", a.Role, from, c.Cut-1)
		}
		s := fmt.Sprintf("model %s messages=%d", a.Role, len(a.Messages))
		if c := a.State.Ctx; c.compacted() {
			s += fmt.Sprintf(" (compacted view of %d)", len(a.State.Messages))
		}
		if len(a.Tools) > 0 {
			s += fmt.Sprintf(" tools=%d", len(a.Tools))
		}
		if n := len(a.Messages); n > 0 {
			s += " last=" + DescribeMessage(a.Messages[n-1])
		}
		return s
	case RequestToolCalls:
		s := "tools"
		if a.Parallel {
			s += " parallel"
		}
		if a.StopOnError {
			s += " stop_on_error"
		}
		return s + " " + describeCalls(a.Calls)
	case RequestExternalToolCalls:
		return "external " + describeCalls(a.Calls)
	case RequestMemorySearch:
		if a.CallID == "" {
			return fmt.Sprintf("recall ns=%s limit=%d %s", a.Namespace, a.Limit, quote(a.Query))
		}
		return fmt.Sprintf("memory_search %s ns=%s limit=%d %s", a.CallID, a.Namespace, a.Limit, quote(a.Query))
	case RequestMemoryCreate:
		names := make([]string, len(a.Entities))
		for i, e := range a.Entities {
			names[i] = e.Name
		}
		return fmt.Sprintf("memory_create %s ns=%s entities=[%s] relations=%d", a.CallID, a.Namespace, strings.Join(names, ","), len(a.Relations))
	case RequestMemoryTraverse:
		s := fmt.Sprintf("memory_traverse %s ns=%s from=%s", a.CallID, a.Namespace, quote(a.From))
		if a.Relation != "" {
			s += " relation=" + quote(a.Relation)
		}
		return s + fmt.Sprintf(" depth=%d", a.Depth)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("unknown action %T", a)
}

// DescribeResult renders a result as deterministic text.
func DescribeResult(r Result) string {
	switch r := r.(type) {
	case ModelReply:
		if r.Error != "" {
			return "reply error " + quote(r.Error)
		}
		s := "reply " + quote(r.Text)
		for _, c := range r.Calls {
			s += fmt.Sprintf(" call(%s %s %s)", c.ID, c.Name, clip(c.Arguments))
		}
		if r.FinishReason != "" {
			s += " finish=" + r.FinishReason
		}
		if r.Usage != (Usage{}) {
			s += fmt.Sprintf(" tokens=%d+%d", r.Usage.PromptTokens, r.Usage.CompletionTokens)
		}
		if r.Usage.CachedTokens != 0 {
			s += fmt.Sprintf(" cached=%d", r.Usage.CachedTokens)
		}
		if r.Usage.ReasoningTokens != 0 {
			s += fmt.Sprintf(" reasoning=%d", r.Usage.ReasoningTokens)
		}
		return s + describeOpaque(r.Opaque)
	case ToolResults:
		parts := make([]string, len(r.Results))
		for i, x := range r.Results {
			parts[i] = describeToolResult(x)
		}
		return "results " + strings.Join(parts, "; ")
	case MemoryHits:
		if r.Error != "" {
			return "hits error " + quote(r.Error)
		}
		names := make([]string, len(r.Hits))
		for i, h := range r.Hits {
			names[i] = h.Entity.Name
		}
		return fmt.Sprintf("hits [%s]", strings.Join(names, ","))
	case MemoryCreated:
		if r.Error != "" {
			return "created error " + quote(r.Error)
		}
		return fmt.Sprintf("created [%s] relations=%d", strings.Join(r.Entities, ","), r.Relations)
	case MemoryTraversed:
		if r.Error != "" {
			return "traversed error " + quote(r.Error)
		}
		return fmt.Sprintf("traversed entities=%d relations=%d", len(r.Entities), len(r.Relations))
	case UserMessage:
		return "user " + quote(r.Content)
	case Cancelled:
		return "cancelled " + quote(r.Reason)
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("unknown result %T", r)
}

// DescribeState renders the parts of a state that decide what comes next.
func DescribeState(st State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s requests=%d model_calls=%d messages=%d", st.Phase, st.Counters.Steps, st.Counters.ModelCalls, len(st.Messages))
	if st.Pending != nil {
		fmt.Fprintf(&b, " pending=%s", st.Pending.Kind)
		if st.Pending.Role != "" {
			fmt.Fprintf(&b, "/%s", st.Pending.Role)
		}
		if len(st.Pending.CallIDs) > 0 {
			fmt.Fprintf(&b, "[%s]", strings.Join(st.Pending.CallIDs, ","))
		}
	}
	if st.Counters.Corrections > 0 {
		fmt.Fprintf(&b, " corrections=%d", st.Counters.Corrections)
	}
	if st.Counters.Escalations > 0 {
		fmt.Fprintf(&b, " escalations=%d", st.Counters.Escalations)
	}
	if st.Counters.LowQuality > 0 {
		fmt.Fprintf(&b, " low_quality=%d", st.Counters.LowQuality)
	}
	if st.Counters.ToolCalls > 0 {
		fmt.Fprintf(&b, " tool_calls=%d", st.Counters.ToolCalls)
	}
	if st.Counters.Cost > 0 {
		fmt.Fprintf(&b, " cost=%s", FormatCost(st.Counters.Cost))
	}
	if st.Recent != nil && st.Recent.Warned {
		b.WriteString(" warned")
	}
	if c := st.Ctx; c.compacted() {
		fmt.Fprintf(&b, " compacted=%d..%d", c.Head, max(c.From, c.Head))
	}
	if c := st.Conv; c != nil {
		fmt.Fprintf(&b, " turn=%d", c.Turn)
		if len(c.Queue) > 0 {
			fmt.Fprintf(&b, " queued=%d", len(c.Queue))
		}
	}
	if len(st.ToolsUsed) > 0 {
		fmt.Fprintf(&b, " tools_used=%s", strings.Join(st.ToolsUsed, ","))
	}
	if st.Failure != nil {
		fmt.Fprintf(&b, " failure=%s", st.Failure.Code)
	}
	return b.String()
}

// DescribeMessage renders one message on one line.
func DescribeMessage(m Message) string {
	s := string(m.Role)
	if m.CallID != "" {
		s += "(" + m.CallID + ")"
	}
	if m.IsError {
		s += " error"
	}
	s += ": " + quote(m.Content)
	for _, c := range m.Calls {
		s += fmt.Sprintf(" call(%s %s %s)", c.ID, c.Name, clip(string(c.Args)))
	}
	return s + describeAttachments(m.Attachments) + describeOpaque(m.Opaque)
}

// describeOpaque names a provider's opaque data and its size, not its bytes.
func describeOpaque(o *Opaque) string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf(" opaque(%s %d bytes)", o.Provider, len(o.Data))
}

func describeCalls(calls []ToolCall) string {
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s %s %s", c.ID, c.Name, clip(string(c.Args)))
	}
	return strings.Join(parts, "; ")
}

func describeToolResult(r ToolResult) string {
	if r.Failed() {
		return r.CallID + " error " + quote(r.Error) + describeAttachments(r.Attachments)
	}
	if r.Cached {
		return r.CallID + " ok (cached) " + quote(r.Output) + describeAttachments(r.Attachments)
	}
	return r.CallID + " ok " + quote(r.Output) + describeAttachments(r.Attachments)
}

func resultKind(r Result) string {
	switch r.(type) {
	case ModelReply:
		return "a model reply"
	case ToolResults:
		return "tool results"
	case MemoryHits:
		return "memory hits"
	case MemoryCreated:
		return "memory created"
	case MemoryTraversed:
		return "memory traversed"
	case UserMessage:
		return "a user message"
	case Cancelled:
		return "a cancellation"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", r)
}

func clip(s string) string {
	if len(s) <= describeWidth {
		return s
	}
	cut := describeWidth
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(+%d bytes)", len(s)-cut)
}

func quote(s string) string { return fmt.Sprintf("%q", clip(s)) }

// plural counts units in words: "1 item", "3 items".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
