package core

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Context compaction (ADR 0033). The log of messages only grows (the
// store keeps every message); what the primary model is sent is a view of
// it that the core keeps under a token bound:
//
//	head     the system message and the first user message, always verbatim
//	summary  a summary standing in for the messages between the head and From
//	         (a message of role "summary" in the log, shown as a user message)
//	tail     the messages from From on, verbatim, except that a tool message
//	         below ElideBelow shows a marker instead of its content, and one
//	         over Cap bytes is cut to Cap
//
// Before each call to the primary model, the core estimates the request
// (the provider-reported prompt tokens of the last call plus an estimate of
// the messages appended since, or the estimator over the whole view) and,
// over the bound, applies the agent's strategies in order until it fits:
// elide the results of tool calls older than the last KeepTurns model
// turns; summarize the messages older than those turns (a model call of its
// own: PhaseCompact, whose reply is stored like any other); then, with one
// kept turn, the same again; last, cut the kept turn's tool results to
// what is left. A model turn starts at an assistant message, so a call and
// its result are never separated. The view depends on the state alone, so
// a stored step restores the request exactly (DecodeAction).

// ContextStrategy is one way of making a request fit.
type ContextStrategy string

// The context strategies, applied in the order a policy lists them.
const (
	ElideResults ContextStrategy = "elide_results"
	Summarize    ContextStrategy = "summarize"
)

// ContextPolicy is an agent's [context] table.
type ContextPolicy struct {
	// MaxTokens bounds a request to the primary model by the estimator.
	MaxTokens int `json:"max_tokens,omitempty"`
	// KeepTurns is how many of the last model turns stay verbatim (0: 4).
	KeepTurns int `json:"keep_turns,omitempty"`
	// Strategies are tried in order (empty: elide_results, summarize).
	Strategies []ContextStrategy `json:"strategies,omitempty"`
	// Summarizer is the model that writes summaries (empty: the helper
	// when the agent has one, else the primary).
	Summarizer ModelRole `json:"summarizer,omitempty"`
	// BytesPerToken is the estimator's ratio (0: 4).
	BytesPerToken int `json:"bytes_per_token,omitempty"`
	// SummaryWords is how long a summary may be (0: 400 words); a longer
	// one is cut to six bytes a word.
	SummaryWords int `json:"summary_words,omitempty"`
}

// RoleSummary is the role of a summary in the log (never sent as such).
const RoleSummary Role = "summary"

// ContextState is where compaction stands (State.Ctx); nil until a
// request was measured.
type ContextState struct {
	// Head is how many messages the head holds.
	Head int `cbor:"1,keyasint,omitempty"`
	// Summary is the index of the summary message (0: none).
	Summary int `cbor:"2,keyasint,omitempty"`
	// From is the first message of the tail (0: Head).
	From int `cbor:"3,keyasint,omitempty"`
	// ElideBelow: the tool messages of the tail below it are elided.
	ElideBelow int `cbor:"4,keyasint,omitempty"`
	// Cap cuts each tool message of the tail to that many bytes (0: no cap).
	Cap int `cbor:"5,keyasint,omitempty"`
	// Tokens is the estimate of the view over the first Counted messages.
	Tokens  int `cbor:"6,keyasint,omitempty"`
	Counted int `cbor:"7,keyasint,omitempty"`
	// Prompt is the prompt tokens the provider reported for the last
	// primary call, which was sent the first PromptAt messages (0: none
	// since the view last changed).
	Prompt   int `cbor:"8,keyasint,omitempty"`
	PromptAt int `cbor:"9,keyasint,omitempty"`
	// Cut, while a summary is being written, is where it ends.
	Cut int `cbor:"10,keyasint,omitempty"`
	// Words bounds the summary being written.
	Words int `cbor:"11,keyasint,omitempty"`
	// Limit is a bound forced by a provider that refused a request as too
	// long (0: the policy's).
	Limit int `cbor:"12,keyasint,omitempty"`
	// Retried is set while the request a provider refused as too long is
	// being made again, once.
	Retried bool `cbor:"13,keyasint,omitempty"`
	// BytesPerToken is the estimator's ratio the counts were made with.
	BytesPerToken int `cbor:"14,keyasint,omitempty"`
}

const (
	defaultKeepTurns    = 4
	defaultBytesPerTok  = 4
	defaultSummaryWords = 400
	messageTokens       = 4    // per message, beyond its text
	attachmentTokens    = 1000 // per attachment (an image)
	minCap              = 256  // bytes of a tool result worth showing
	elidedMarker        = "[result elided to fit the context: %d bytes; the call stands, ask again if it is needed]"
	cutMarker           = "\n[cut to fit the context: %d of %d bytes shown]"
)

// policy is the context policy in effect: the agent's, or the default one
// a provider's refusal brings in.
func (c Config) contextPolicy() ContextPolicy {
	if c.Context != nil {
		return *c.Context
	}
	return ContextPolicy{}
}

func (p ContextPolicy) keep() int { return pick(p.KeepTurns, defaultKeepTurns) }
func (p ContextPolicy) bpt() int  { return pick(p.BytesPerToken, defaultBytesPerTok) }
func (p ContextPolicy) strategies() []ContextStrategy {
	if len(p.Strategies) > 0 {
		return p.Strategies
	}
	return []ContextStrategy{ElideResults, Summarize}
}

func (c Config) summarizer() ModelRole {
	p := c.contextPolicy()
	if p.Summarizer != "" {
		return p.Summarizer
	}
	if c.Models.Helper != "" {
		return Helper
	}
	return Primary
}

// contextLimit is the bound a primary request is held to (0: none).
func (c Config) contextLimit(st State) int {
	if st.Ctx != nil && st.Ctx.Limit > 0 {
		return st.Ctx.Limit
	}
	if c.Context != nil {
		return c.Context.MaxTokens
	}
	return 0
}

// messageTokensOf is the estimator: a message's bytes over the ratio,
// rounded up, plus a few tokens for its framing and a fixed count per
// attachment.
func messageTokensOf(m Message, bpt int) int {
	n := len(m.Content) + len(m.Name) + len(m.CallID)
	for _, c := range m.Calls {
		n += len(c.ID) + len(c.Name) + len(c.Args) + 16
	}
	return (n+bpt-1)/bpt + messageTokens + attachmentTokens*len(m.Attachments)
}

// toolsTokens estimates the tool declarations a request carries.
func toolsTokens(cfg Config, bpt int) int {
	n := 0
	for _, t := range nativeTools(cfg) {
		n += (len(t.Name)+len(t.Description)+len(t.Parameters)+bpt-1)/bpt + messageTokens
	}
	return n
}

// headEnd is how many messages the head holds: up to the first user
// message (included), or the system message alone.
func headEnd(msgs []Message) int {
	for i, m := range msgs {
		if m.Role == RoleUser {
			return i + 1
		}
	}
	return min(1, len(msgs))
}

// compacted reports whether the view differs from the log.
func (c *ContextState) compacted() bool {
	return c != nil && (c.Summary > 0 || c.From > c.Head || c.ElideBelow > 0 || c.Cap > 0)
}

// contextView is what a primary request sends of st's messages.
func contextView(st State) []Message {
	c := st.Ctx
	if !c.compacted() {
		return st.Messages
	}
	msgs := st.Messages
	head, from := c.bounds(len(msgs))
	out := make([]Message, 0, head+1+len(msgs)-from)
	out = append(out, msgs[:head]...)
	if c.Summary > 0 && c.Summary < len(msgs) {
		out = append(out, Message{Role: RoleUser, Content: summaryHeading + msgs[c.Summary].Content})
	}
	if at := pinned(st); at >= head && at < from {
		out = append(out, msgs[at]) // the message the user turn in progress answers
	}
	for i := from; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == RoleSummary {
			continue
		}
		out = append(out, c.shown(i, m))
	}
	return out
}

// bounds are the head's end and the tail's start, within a log of n
// messages (a decoded state may hold anything).
func (c *ContextState) bounds(n int) (head, from int) {
	head = min(max(c.Head, 0), n)
	return head, min(max(c.From, head), n)
}

// pinned is the index of the user message that began the user turn in
// progress, which a view always shows (-1: the first's, in the head).
func pinned(st State) int {
	if st.Conv == nil || st.Conv.At <= 0 || st.Conv.At >= len(st.Messages) || st.Messages[st.Conv.At].Role != RoleUser {
		return -1
	}
	return st.Conv.At
}

const summaryHeading = "Summary of the earlier conversation (compacted to fit the context):\n"

// shown is message i of the tail as the view shows it.
func (c *ContextState) shown(i int, m Message) Message {
	if m.Role != RoleTool {
		return m
	}
	switch {
	case i < c.ElideBelow:
		m.Content = fmt.Sprintf(elidedMarker, len(m.Content))
		m.Attachments = nil
	case c.Cap > 0 && len(m.Content) > c.Cap:
		m.Content = cutUTF8(m.Content, c.Cap) + fmt.Sprintf(cutMarker, c.Cap, len(m.Content))
	}
	return m
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// viewTokens counts the view of st from scratch (after the view changed).
func viewTokens(st State, c *ContextState, bpt int) int {
	n := 0
	saved := st.Ctx
	st.Ctx = c
	for _, m := range contextView(st) {
		n += messageTokensOf(m, bpt)
	}
	st.Ctx = saved
	return n
}

// measure brings the context state's counts up to date with the messages
// appended since: O(appended).
func measure(cfg Config, st State) ContextState {
	bpt := cfg.contextPolicy().bpt()
	var c ContextState
	if st.Ctx != nil {
		c = *st.Ctx
	}
	if c.Head == 0 {
		c.Head = headEnd(st.Messages)
	}
	if c.BytesPerToken != bpt {
		// Another estimator (a changed agent): count again.
		c.BytesPerToken, c.Counted = bpt, len(st.Messages)
		c.Tokens = viewTokens(st, &c, bpt)
		c.Prompt = 0
	}
	for i := c.Counted; i < len(st.Messages); i++ {
		if m := st.Messages[i]; m.Role != RoleSummary {
			c.Tokens += messageTokensOf(c.shown(i, m), bpt)
		}
	}
	c.Counted = len(st.Messages)
	return c
}

// estimate is the size of the next primary request: the estimator over
// the view, or, when the provider reported the last call's prompt tokens
// and that with the messages appended since is more, that (the estimator
// never undercounts what a provider counted).
func estimate(cfg Config, st State, c *ContextState) int {
	bpt := c.BytesPerToken
	n := c.Tokens + toolsTokens(cfg, bpt)
	if c.Prompt > 0 && c.PromptAt <= len(st.Messages) {
		reported := c.Prompt
		for i := c.PromptAt; i < len(st.Messages); i++ {
			if m := st.Messages[i]; m.Role != RoleSummary {
				reported += messageTokensOf(c.shown(i, m), bpt)
			}
		}
		n = max(n, reported)
	}
	return n
}

// RequestTokens is the estimator's size of a model request of cfg's agent:
// what a context bound (ContextPolicy.MaxTokens) holds requests to.
func RequestTokens(cfg Config, a RequestModelCall) int {
	bpt := cfg.contextPolicy().bpt()
	n := 0
	for _, m := range a.Messages {
		n += messageTokensOf(m, bpt)
	}
	for _, t := range a.Tools {
		n += (len(t.Name)+len(t.Description)+len(t.Parameters)+bpt-1)/bpt + messageTokens
	}
	return n
}

// turnStarts are the indices of the tail's model turns: each assistant
// message starts one.
func turnStarts(st State, from int) []int {
	var out []int
	for i := from; i < len(st.Messages); i++ {
		if st.Messages[i].Role == RoleAssistant {
			out = append(out, i)
		}
	}
	return out
}

// keepFrom is where the last k model turns of the tail begin (len of the
// log when there are none).
func keepFrom(st State, from, k int) int {
	starts := turnStarts(st, from)
	if len(starts) < k {
		if len(starts) == 0 {
			return len(st.Messages)
		}
		return starts[0]
	}
	return starts[len(starts)-k]
}

// fitContext holds the next primary request to the bound: it returns the
// state with its view made to fit, or with a summary requested
// (summarize), or failed when the messages that must stay verbatim do not
// fit. final is set for the final request of LimitAnswer, which is made at
// once (no summary).
func fitContext(cfg Config, st State, final bool) (State, bool) {
	limit := cfg.contextLimit(st)
	if limit <= 0 {
		return st, false
	}
	c := measure(cfg, st)
	st.Ctx = &c
	if estimate(cfg, st, &c) <= limit {
		return st, false
	}
	c.Prompt = 0 // the view changes: the provider's count no longer applies
	p := cfg.contextPolicy()
	bpt := c.BytesPerToken
	fits := func() bool {
		c.Prompt = 0
		c.Tokens = viewTokens(st, &c, bpt)
		return c.Tokens+toolsTokens(cfg, bpt) <= limit
	}
	_, from := c.bounds(len(st.Messages))
	for _, k := range []int{p.keep(), 1} {
		cut := keepFrom(st, from, k)
		for _, s := range p.strategies() {
			switch s {
			case ElideResults:
				if cut > c.ElideBelow {
					c.ElideBelow = cut
					if fits() {
						return st, false
					}
				}
			case Summarize:
				if !final && cut > from && summarizable(st, from, cut) {
					c.Cut = cut
					c.Words = pick(p.SummaryWords, defaultSummaryWords)
					return st, true
				}
			}
		}
	}
	// The last model turn's tool results, cut to share what is left.
	c.ElideBelow = max(c.ElideBelow, keepFrom(st, from, 1))
	if fits() {
		return st, false
	}
	base, results := 0, 0
	saved := c.Cap
	c.Cap = 1 // every tool message down to its marker: what else is left
	view := contextViewWith(st, &c)
	for _, m := range view {
		base += messageTokensOf(m, bpt)
		if m.Role == RoleTool {
			results++
		}
	}
	c.Cap = saved
	room := (limit-base-toolsTokens(cfg, bpt))*bpt/max(results, 1) - len(cutMarker) - 16
	if results > 0 && room >= minCap {
		c.Cap = room
		if fits() {
			return st, false
		}
	}
	st.Ctx = &c
	return failed(st, FailContext, fmt.Sprintf("the request cannot fit its bound of %d tokens: the system prompt, the first user message and the last model turn alone take about %d", limit, c.Tokens+toolsTokens(cfg, bpt))), false
}

func contextViewWith(st State, c *ContextState) []Message {
	st.Ctx = c
	return contextView(st)
}

// summarizable reports whether [from, cut) holds a message to summarize.
func summarizable(st State, from, cut int) bool {
	for i := from; i < cut; i++ {
		if st.Messages[i].Role != RoleSummary {
			return true
		}
	}
	return false
}

const summarizerInstructions = "You compact the earlier part of a conversation between a user and an AI agent that uses tools, " +
	"so that the agent can go on without it. Write a faithful summary: the user's requests, the facts, names, numbers and " +
	"decisions, what the tools returned that still matters, and what is still open. Do not invent anything. " +
	"Reply with the summary only, in at most %d words."

// summaryBytesPerWord cuts a summary longer than it was asked to be.
const summaryBytesPerWord = 6

// compactMessages is the request for a summary of the messages between
// the tail's start and the cut, after the summary so far. Each message is
// shown cut to a share of a bound, so the request stays bounded too.
func compactMessages(st State) []Message {
	c := st.Ctx
	if c == nil {
		return nil
	}
	_, from := c.bounds(len(st.Messages))
	cut := min(max(c.Cut, from), len(st.Messages))
	var b strings.Builder
	if c.Summary > 0 && c.Summary < len(st.Messages) {
		b.WriteString("Summary so far:\n")
		b.WriteString(st.Messages[c.Summary].Content)
		b.WriteString("\n\n")
	}
	b.WriteString("Messages to add to it:\n")
	share := max(200, compactBudget/max(1, cut-from))
	for i := from; i < cut; i++ {
		m := st.Messages[i]
		if m.Role == RoleSummary {
			continue
		}
		m = c.shown(i, m)
		line := string(m.Role)
		if m.Role == RoleTool {
			line += " (" + m.Name + ")"
		}
		line += ": " + cutUTF8(m.Content, share)
		for _, call := range m.Calls {
			line += fmt.Sprintf(" [call %s %s]", call.Name, cutUTF8(string(call.Args), 200))
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return []Message{
		{Role: RoleSystem, Content: fmt.Sprintf(summarizerInstructions, c.Words)},
		{Role: RoleUser, Content: b.String()},
	}
}

// compactBudget bounds the text of the messages a summary request shows.
const compactBudget = 64 << 10

// resumeCompact takes a summary: it is appended to the log (role
// summary), stands in for the messages up to the cut from now on, and the
// run goes on to the call it was made for.
func resumeCompact(cfg Config, st State, r ModelReply) State {
	c := *st.Ctx
	text := strings.TrimSpace(r.Text)
	if limit := c.Words * summaryBytesPerWord; limit > 0 && len(text) > limit {
		text = cutUTF8(text, limit)
	}
	if text == "" {
		text = "(no summary was written of the earlier messages)"
	}
	st = appendMessages(st, Message{Role: RoleSummary, Content: text})
	c.Summary = len(st.Messages) - 1
	c.From, c.Cut, c.Words = c.Cut, 0, 0
	c.Counted = len(st.Messages)
	c.Prompt = 0
	c.Tokens = viewTokens(st, &c, c.BytesPerToken)
	st.Ctx = &c
	st.Phase = PhaseModel
	return st
}

// noteReply remembers what the provider reported of a primary call, for
// the next estimate, and that the call went through.
func noteReply(st State, r ModelReply, sent int) State {
	if st.Ctx == nil {
		return st
	}
	c := *st.Ctx
	c.Retried = false
	if r.Usage.PromptTokens > 0 {
		c.Prompt, c.PromptAt = r.Usage.PromptTokens, sent
	}
	st.Ctx = &c
	return st
}

// overflowed handles a provider's refusal of a primary request as too
// long: the first time, the bound becomes three quarters of what was sent
// and the request is made again, compacted; a second refusal in a row
// fails the run.
func overflowed(cfg Config, st State, r ModelReply) (State, bool) {
	if st.Ctx != nil && st.Ctx.Retried {
		return st, false
	}
	c := measure(cfg, st)
	sent := estimate(cfg, st, &c)
	c.Limit = max(1, sent*3/4)
	if l := cfg.contextLimit(st); l > 0 && l < c.Limit {
		c.Limit = l * 3 / 4
	}
	c.Retried = true
	st.Ctx = &c
	return st, true
}

// Errors are the problems of the policy's settings.
func (p ContextPolicy) Errors() []string {
	var errs []string
	for _, v := range []struct {
		name string
		v    int
	}{{"max_tokens", p.MaxTokens}, {"keep_turns", p.KeepTurns}, {"bytes_per_token", p.BytesPerToken}, {"summary_words", p.SummaryWords}} {
		if v.v < 0 {
			errs = append(errs, fmt.Sprintf("context.%s is negative", v.name))
		}
	}
	for _, s := range p.Strategies {
		switch s {
		case ElideResults, Summarize:
		default:
			errs = append(errs, fmt.Sprintf("context.strategies: %q is not one of elide_results, summarize", s))
		}
	}
	switch p.Summarizer {
	case "", Primary, Helper:
	default:
		errs = append(errs, fmt.Sprintf("context.summarizer %q is not one of primary, helper", p.Summarizer))
	}
	return errs
}
