package shell

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

// View is what a tool asks to see of its run with each call: a list of
// fields, each one of
//
//	run_id      the run's id
//	step        the step whose request made the call
//	agent       the agent's name
//	tools_used  the tools the run has used so far, in first-use order
//	messages:N  the last N messages of the conversation (1 <= N <= 1000)
//
// A tool that declares a View gets it as RunContext.View: a Go tool reads
// it with RunContextFrom, a command tool reads it as JSON from the file
// named by STEPWISE_VIEW (see tools.CommandSpec). A tool without one gets
// none. The view is taken from the run's state, which holds secrets only
// as "[redacted:NAME]" markers, so it holds none either.
type View []string

// The View fields.
const (
	ViewRunID     = "run_id"
	ViewStep      = "step"
	ViewAgent     = "agent"
	ViewToolsUsed = "tools_used"
	ViewMessages  = "messages"
)

// maxViewMessages bounds messages:N.
const maxViewMessages = 1000

// viewFields is a parsed View: which fields, and how many messages.
type viewFields struct {
	runID, step, agent, toolsUsed bool
	messages                      int
}

// Validate reports whether every field of v is known, naming the first
// that is not.
func (v View) Validate() error {
	_, err := v.parse()
	return err
}

func (v View) parse() (viewFields, error) {
	var f viewFields
	seen := map[string]bool{}
	for _, field := range v {
		name, n, hasN := strings.Cut(field, ":")
		if seen[name] {
			return f, fmt.Errorf("view: %q is listed twice", name)
		}
		seen[name] = true
		if hasN != (name == ViewMessages) {
			return f, fmt.Errorf("view: unknown field %q; the fields are run_id, step, agent, tools_used and messages:N (the last N messages)", field)
		}
		switch name {
		case ViewRunID:
			f.runID = true
		case ViewStep:
			f.step = true
		case ViewAgent:
			f.agent = true
		case ViewToolsUsed:
			f.toolsUsed = true
		case ViewMessages:
			k, err := strconv.Atoi(n)
			if err != nil || k < 1 || k > maxViewMessages {
				return f, fmt.Errorf("view: %q: N must be a whole number from 1 to %d", field, maxViewMessages)
			}
			f.messages = k
		default:
			return f, fmt.Errorf("view: unknown field %q; the fields are run_id, step, agent, tools_used and messages:N (the last N messages)", field)
		}
	}
	return f, nil
}

// RunView is the part of a run a tool declared it wants (View): only those
// fields are set, and only those are written as JSON, in the order of the
// struct, each present even when empty.
type RunView struct {
	RunID     string
	Step      int
	Agent     string
	ToolsUsed []string
	// Messages are the last messages of the conversation, oldest first.
	Messages []core.Message

	fields viewFields
}

// Has reports whether the view includes field (a View field name;
// "messages" for messages:N).
func (rv *RunView) Has(field string) bool {
	switch field {
	case ViewRunID:
		return rv.fields.runID
	case ViewStep:
		return rv.fields.step
	case ViewAgent:
		return rv.fields.agent
	case ViewToolsUsed:
		return rv.fields.toolsUsed
	case ViewMessages:
		return rv.fields.messages > 0
	}
	return false
}

// MarshalJSON writes the declared fields: {"run_id": ..., "step": ...,
// "agent": ..., "tools_used": [...], "messages": [{"role", "content",
// "calls", "call_id", "name", "is_error"}]}.
func (rv *RunView) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	add := func(key string, v any) error {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		val, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.WriteString(strconv.Quote(key) + ":")
		b.Write(val)
		return nil
	}
	for _, f := range []struct {
		on  bool
		key string
		v   any
	}{
		{rv.fields.runID, ViewRunID, rv.RunID},
		{rv.fields.step, ViewStep, rv.Step},
		{rv.fields.agent, ViewAgent, rv.Agent},
		{rv.fields.toolsUsed, ViewToolsUsed, nonNilStrings(rv.ToolsUsed)},
		{rv.fields.messages > 0, ViewMessages, nonNilMessages(rv.Messages)},
	} {
		if f.on {
			if err := add(f.key, f.v); err != nil {
				return nil, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMessages(m []core.Message) []core.Message {
	if m == nil {
		return []core.Message{}
	}
	return m
}

// runView builds the view a tool declared of the run cur is at, or nil
// when it declared none. x redacts once more what the state already holds
// redacted (a secret never reaches a tool this way).
func runView(v View, ag *Agent, cur *cursor, x Redactor) *RunView {
	if len(v) == 0 {
		return nil
	}
	f, err := v.parse()
	if err != nil {
		return nil // checked at start (Runner.check)
	}
	rv := &RunView{fields: f}
	if f.runID {
		rv.RunID = cur.id
	}
	if f.step {
		rv.Step = cur.seq
	}
	if f.agent {
		rv.Agent = ag.Config.Name
	}
	if f.toolsUsed {
		rv.ToolsUsed = append([]string{}, cur.st.ToolsUsed...)
	}
	if f.messages > 0 {
		msgs := cur.st.Messages
		if len(msgs) > f.messages {
			msgs = msgs[len(msgs)-f.messages:]
		}
		rv.Messages = make([]core.Message, len(msgs))
		for i, m := range msgs {
			m.Content = x.String(m.Content)
			if len(m.Calls) > 0 {
				calls := make([]core.ToolCall, len(m.Calls))
				for j, c := range m.Calls {
					c.Args = json.RawMessage(x.String(string(c.Args)))
					calls[j] = c
				}
				m.Calls = calls
			}
			rv.Messages[i] = m
		}
	}
	return rv
}
