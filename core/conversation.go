package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A run is a conversation (ADR 0032). A user turn begins with a user
// message (the run's input, or a UserMessage) and ends when the run
// answers it (Complete). A run that answered waits for the user's next
// message: Resume with a UserMessage begins the next turn in the same
// state, so its messages, memory, tools used and sources carry over, and
// so do the budgets unless Budget.Per is PerTurn. The limits (max_steps,
// max_turns, the corrections and escalations in a row, the repeats and
// cycles) count from the start of each user turn. A failed or cancelled
// run has ended for good; Cancelled on a run that answered closes its
// conversation.
//
// A message sent while the run works (a request is pending) is queued in
// the state (Conversation.Queue), in order, and delivered as a user
// message before the next call to the primary model; a primary call that
// is decided but not yet made takes it at once. With OnInterrupt, a
// message sent while the turn waits on tool calls ends the turn instead:
// the calls not run yet are answered with an error saying so, and the
// model is asked about the new message. A turn that ends while messages
// are queued begins the next turn with them at once.

// OnMessage is what a user message does to a run at work.
type OnMessage string

// The message policies.
const (
	OnQueue     OnMessage = "queue"     // wait for the next model call (the default)
	OnInterrupt OnMessage = "interrupt" // end the turn in flight at its next step
)

// ConversationPolicy is an agent's [conversation] table.
type ConversationPolicy struct {
	OnMessage OnMessage `json:"on_message,omitempty"`
	// MaxMessageBytes bounds a user message (0: DefaultMaxMessageBytes).
	MaxMessageBytes int `json:"max_message_bytes,omitempty"`
}

// DefaultMaxMessageBytes bounds a user message when the agent does not.
const DefaultMaxMessageBytes = 256 << 10

// Errors Resume returns for a user message it refuses; the state is left
// as it was.
var (
	ErrEmptyMessage      = errors.New("the message is empty")
	ErrMessageTooLarge   = errors.New("the message is too large")
	ErrConversationEnded = errors.New("the conversation has ended")
	ErrBadHistory        = errors.New("bad message history")
)

// MaxMessageBytes is the size a user message of cfg may have.
func (c Config) MaxMessageBytes() int {
	return pick(c.Conversation.MaxMessageBytes, DefaultMaxMessageBytes)
}

// CheckMessage reports why cfg's runs would refuse content as a user
// message, whatever their state: ErrEmptyMessage or ErrMessageTooLarge.
// The shell asks before it stores anything.
func CheckMessage(cfg Config, content string) error {
	if strings.TrimSpace(content) == "" {
		return ErrEmptyMessage
	}
	if n, limit := len(content), cfg.MaxMessageBytes(); n > limit {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrMessageTooLarge, n, limit)
	}
	return nil
}

// receive folds a user message in (see the comment at the top).
func receive(cfg Config, st State, m UserMessage) (State, error) {
	if err := CheckMessage(cfg, m.Content); err != nil {
		return st, err
	}
	if st.Phase == PhaseFailed {
		return st, fmt.Errorf("%w: the run %s (%s)", ErrConversationEnded, endedHow(st), st.Failure.Reason)
	}
	if n, limit := st.Counters.Bytes+queuedBytes(st)+messageSize(Message{Role: RoleUser, Content: m.Content}), cfg.maxStateBytes(); n > limit {
		return st, fmt.Errorf("%w: the conversation would grow to about %d bytes, over its limit of %d (limits.max_state_bytes)", ErrMessageTooLarge, n, limit)
	}
	p := st.Pending
	switch {
	case st.Phase == PhaseDone:
		return beginTurn(st, m.Content), nil
	case p == nil:
		return st, fmt.Errorf("%w: phase %s with nothing pending", ErrBadState, st.Phase)
	case st.Phase == PhaseModel && p.Kind == PendingModel && p.Role == Primary:
		return beginTurn(deliverQueue(st), m.Content), nil
	}
	st = queue(st, m.Content)
	if cfg.Conversation.OnMessage == OnInterrupt && (p.Kind == PendingTools || p.Kind == PendingExternal) {
		return interrupt(cfg, st), nil
	}
	return st, nil
}

func queuedBytes(st State) int {
	n := 0
	if st.Conv != nil {
		for _, q := range st.Conv.Queue {
			n += messageSize(Message{Role: RoleUser, Content: q})
		}
	}
	return n
}

func endedHow(st State) string {
	if st.Failure.Code == FailCancelled {
		return "was cancelled"
	}
	return "failed"
}

// queue keeps a message for the next model call.
func queue(st State, text string) State {
	conv := st.conversation()
	conv.Queue = append(conv.Queue[:len(conv.Queue):len(conv.Queue)], text)
	st.Conv = &conv
	return st
}

// interruptMessage answers the calls a user message kept from running.
const interruptMessage = "not run: the user sent a new message, which ended this turn"

// interrupt ends the turn in flight: the calls not answered yet get an
// error result, the results go to the model as at any turn's end, and the
// queued message follows them.
func interrupt(cfg Config, st State) State {
	turn := *st.Turn
	turn.Results = append([]ToolResult(nil), st.Turn.Results...)
	for i, r := range turn.Results {
		if r.CallID == "" {
			turn.Results[i] = ToolResult{CallID: turn.Calls[i].ID, Error: interruptMessage}
		}
	}
	turn.Program = nil
	st.Pending = nil
	st.Turn = &turn
	return finishTurn(cfg, st)
}

// deliverQueue hands the queued messages to the model: each begins a
// user turn, the last one the turn that goes on.
func deliverQueue(st State) State {
	if st.Conv == nil || len(st.Conv.Queue) == 0 {
		return st
	}
	msgs := st.Conv.Queue
	conv := *st.Conv
	conv.Queue = nil
	st.Conv = &conv
	for _, text := range msgs {
		st = beginTurn(st, text)
	}
	return st
}

// beginTurn appends the user's message and counts the limits from here.
func beginTurn(st State, text string) State {
	conv := st.conversation()
	conv.Turn++
	conv.Input = text
	conv.Base = st.Counters
	conv.Base.Bytes, conv.Base.LastCall = 0, ""
	conv.At = len(st.Messages)
	st.Conv = &conv
	st.Counters.Corrections, st.Counters.Repeats, st.Counters.LastCall, st.Counters.LowQuality = 0, 0, "", 0
	st.Recent = nil
	st.Escalation = ""
	if st.Phase == PhaseDone {
		st.Answer = ""
	}
	st.Phase = PhaseModel
	return appendMessages(st, Message{Role: RoleUser, Content: text})
}

// conversation is a copy of the state's conversation, or the first turn's.
func (st State) conversation() Conversation {
	if st.Conv != nil {
		c := *st.Conv
		return c
	}
	return Conversation{Turn: 1, Input: st.Request.Input}
}

// turnBase is the counters when the user turn in progress began.
func (st State) turnBase() Counters {
	if st.Conv == nil {
		return Counters{}
	}
	return st.Conv.Base
}

// task is the message the user turn in progress answers.
func (st State) task() string {
	if st.Conv != nil {
		return st.Conv.Input
	}
	return st.Request.Input
}

// UserTurns is how many user turns the run has had: 1 until the user sent
// a message after its start.
func (st State) UserTurns() int {
	if st.Conv == nil {
		return 1
	}
	return st.Conv.Turn
}

// endTurn ends the user turn after a turn of calls when one of them was a
// call of a tool that ends turns and it succeeded: its result (the last
// such, in the model's order) is the answer.
func endTurn(cfg Config, st State, turn *Turn) State {
	if st.Phase != PhaseModel {
		return st // the run failed (a cycle)
	}
	for i := len(turn.Calls) - 1; i >= 0; i-- {
		t, _ := cfg.tool(turn.Calls[i].Name)
		if r := turn.Results[i]; t.EndsTurn && r.CallID != "" && !r.Failed() {
			return complete(cfg, st, r.Output)
		}
	}
	return st
}

func (p ConversationPolicy) errors() []string {
	var errs []string
	switch p.OnMessage {
	case "", OnQueue, OnInterrupt:
	default:
		errs = append(errs, fmt.Sprintf("conversation.on_message %q is not one of queue, interrupt", p.OnMessage))
	}
	if p.MaxMessageBytes < 0 {
		errs = append(errs, "conversation.max_message_bytes is negative")
	}
	return errs
}

// startHistory fills a new state from a message history: checked, made
// valid UTF-8, and appended after the agent's system message. A system
// message may only come first; it then replaces the agent's prompt (the
// tool documentation of a text format still follows it).
func startHistory(cfg Config, st State, history []Message) (State, error) {
	if len(history) == 0 {
		return st, fmt.Errorf("%w: it holds no messages", ErrBadHistory)
	}
	msgs := make([]Message, len(history))
	for i, m := range history {
		msgs[i] = cleanMessage(m)
	}
	if err := checkHistory(msgs); err != nil {
		return st, err
	}
	if msgs[0].Role == RoleSystem {
		cfg.SystemPrompt = msgs[0].Content
		msgs = msgs[1:]
	}
	st.Messages = nil
	st.Counters.Bytes = 0
	if sys := systemPrompt(cfg); sys != "" {
		st = appendMessages(st, Message{Role: RoleSystem, Content: sys})
	}
	st = appendMessages(st, msgs...)
	users := 0
	for _, m := range msgs {
		if m.Role == RoleUser {
			users++
			st.Request.Input = m.Content
		}
	}
	st.Request.History = len(history)
	if users > 1 {
		st.Conv = &Conversation{Turn: users, Input: st.Request.Input}
	}
	return st, nil
}

// checkHistory refuses a history a model could not be asked to go on
// from: an unknown role, a system message after the first, a call without
// an id or a name or with arguments that are not a JSON object, a call
// answered by no tool message before the next message of another role, a
// tool message for no call of the assistant message before it (or for one
// already answered), and a history that does not end with the user's
// message or tool results.
func checkHistory(msgs []Message) error {
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%w: message %d: %s", ErrBadHistory, i+1, fmt.Sprintf(format, args...))
	}
	var open []string // the calls of the last assistant message not answered yet
	openAt := 0
	seen := map[string]bool{}
	for i, m := range msgs {
		if m.Role != RoleTool && len(open) > 0 {
			return bad(openAt, "call %q has no result (a tool message with its tool_call_id must follow the assistant message)", open[0])
		}
		switch m.Role {
		case RoleSystem:
			if i > 0 {
				return bad(i, "a system message may only come first")
			}
		case RoleUser:
			if strings.TrimSpace(m.Content) == "" {
				return bad(i, "the user message is empty")
			}
		case RoleAssistant:
			if m.Content == "" && len(m.Calls) == 0 {
				return bad(i, "the assistant message has neither content nor tool calls")
			}
			for _, c := range m.Calls {
				switch {
				case c.ID == "":
					return bad(i, "a tool call has no id")
				case seen[c.ID]:
					return bad(i, "tool call id %q is used twice", c.ID)
				case c.Name == "":
					return bad(i, "tool call %q has no name", c.ID)
				case !isJSONObject(c.Args):
					return bad(i, "the arguments of tool call %q are not a JSON object", c.ID)
				}
				seen[c.ID] = true
				open = append(open, c.ID)
			}
			openAt = i
		case RoleTool:
			j := slices.Index(open, m.CallID)
			if j < 0 {
				if seen[m.CallID] {
					return bad(i, "the tool message answers call %q, which was already answered or is not the last assistant message's", m.CallID)
				}
				return bad(i, "the tool message answers call %q, which no assistant message made", m.CallID)
			}
			open = append(open[:j:j], open[j+1:]...)
		default:
			return bad(i, "unknown role %q (want system, user, assistant or tool)", m.Role)
		}
	}
	if len(open) > 0 {
		return bad(openAt, "call %q has no result (a tool message with its tool_call_id must follow the assistant message)", open[0])
	}
	switch msgs[len(msgs)-1].Role {
	case RoleUser, RoleTool:
		return nil
	}
	return bad(len(msgs)-1, "the history must end with the user's message or tool results, for the model to answer")
}

func isJSONObject(raw json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && v != nil
}

// cleanMessage makes a history message's text valid UTF-8.
func cleanMessage(m Message) Message {
	m.Content = clean(m.Content)
	m.Name = clean(m.Name)
	m.CallID = clean(m.CallID)
	if len(m.Calls) > 0 {
		calls := make([]ToolCall, len(m.Calls))
		for i, c := range m.Calls {
			calls[i] = ToolCall{ID: clean(c.ID), Name: clean(c.Name), Args: c.Args}
		}
		m.Calls = calls
	}
	return m
}
