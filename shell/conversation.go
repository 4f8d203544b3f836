package shell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// A run is a conversation (ADR 0032): once it answered, the user's next
// message goes on with it. A message is posted to the run's inbox in the
// store first (store.Runs.PostMessage), so that it is durable and in its
// place whatever drives the run; whoever drives the run then folds it in
// as a step of its own (a checkpoint whose result is the core.UserMessage
// and which removes it from the inbox): the runner that posted it when
// the run is free, or the driver that holds the run, at its next step
// boundary (checksInbox). A message to a completed run makes it running,
// so that a server's workers claim it.

// Say sends the user's next message to a run and drives the run on, as
// Resume does, until it answers, fails, pauses for external tools, stalls
// or ctx ends. A run that answered begins a new turn with it; a run at
// work takes it as the agent's [conversation] on_message says. The
// message is refused before anything is stored when it is empty or over
// the agent's limit (core.ErrEmptyMessage, core.ErrMessageTooLarge), and
// for a run that failed or was cancelled (ErrRunEnded and
// core.ErrConversationEnded). When another driver holds the run, the
// message stays queued for it and Say returns ErrBusy.
func (r *Runner) Say(ctx context.Context, ag *Agent, runID, content string) (Outcome, error) {
	ag = ag.current()
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	if _, err := r.post(ctx, ag, runID, content); err != nil {
		return Outcome{}, err
	}
	out, err := r.resume(ctx, ag, runID, nil)
	if errors.Is(err, ErrBusy) {
		return Outcome{RunID: runID, Status: store.StatusRunning}, fmt.Errorf("%w; the message is queued, and the run's driver delivers it", err)
	}
	return out, err
}

// Message is Runner.Say for a server: the message is posted, folded in
// when the run is free (a step of its own), and the run left for a worker
// to go on with. When another driver holds the run, the message waits in
// the run's inbox for it, and Message reports the run as it stands.
func (p *Pool) Message(ctx context.Context, ag *Agent, runID, content string) (Outcome, error) {
	r := p.r
	ag = ag.current()
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	if _, err := r.post(ctx, ag, runID, content); err != nil {
		return Outcome{}, err
	}
	out, err := p.prepare(ctx, ag, runID, func(context.Context, *holding, *cursor) error { return nil })
	if !errors.Is(err, ErrBusy) {
		return out, err
	}
	info, err := r.store.Run(ctx, runID)
	if err != nil {
		return Outcome{}, fmt.Errorf("run %s: %w", runID, err)
	}
	return Outcome{RunID: runID, Status: info.Status, Steps: info.LastSeq, Reason: "the message is queued for the run's driver"}, nil
}

// post checks a message against ag's limits and stores it in the run's
// inbox, its secrets redacted.
func (r *Runner) post(ctx context.Context, ag *Agent, runID, content string) (int, error) {
	if err := core.CheckMessage(ag.Config, content); err != nil {
		return 0, fmt.Errorf("message to run %s: %w", runID, err)
	}
	n, err := r.store.PostMessage(ctx, runID, NewRedactor(ag.Secrets).String(content))
	if errors.Is(err, store.ErrEnded) {
		return 0, fmt.Errorf("message to run %s: %w: %w (%w)", runID, ErrRunEnded, core.ErrConversationEnded, err)
	}
	if err != nil {
		return 0, fmt.Errorf("message to run %s: %w", runID, err)
	}
	note(runID)
	return n, nil
}

// noted holds the runs a message was posted to from this process and not
// yet looked for by a drive here: a drive looks at once. A message another
// process posts is seen at the driver's next heartbeat (a third of the
// lease's TTL), which reads the run's count of posted messages; a pause,
// the end of a turn and a loaded run always look.
var noted sync.Map

// notes counts noted's entries, roughly; past maxNotes (runs posted to here
// and driven elsewhere) they are dropped: a note is a hint, and a driver
// without one still sees the message at its next heartbeat.
var notes atomic.Int64

const maxNotes = 10_000

// note records a post to runID for a drive in this process.
func note(runID string) {
	if _, had := noted.LoadOrStore(runID, struct{}{}); !had && notes.Add(1) > maxNotes {
		noted.Clear()
		notes.Store(0)
	}
}

// inboxDue reports whether the drive reads the inbox before acting on a
// (one of checksInbox's): when a message may be there. left is the status
// the checkpoint of a, written now, left the run in ("" when none was, or
// it is not known).
func inboxDue(cur *cursor, h *holding, a core.Action, left store.Status) bool {
	switch a.(type) {
	case core.Complete:
		// A completion whose checkpoint left the run completed had no
		// message waiting: one posted since made the run running, for a
		// worker to claim once this drive lets it go. The store leaves a
		// completing run running only for a message that waits.
		return left != store.StatusCompleted
	case core.RequestExternalToolCalls:
		return true
	}
	_, posted := noted.LoadAndDelete(cur.id)
	if posted {
		notes.Add(-1)
	}
	due := cur.inboxDue || h.inboxHint.Swap(false) || posted
	cur.inboxDue = false
	return due
}

// checksInbox reports whether the drive looks for posted messages before
// acting on a: before a model call (which a queued message goes with),
// at the end of a turn and at a pause (which a message goes on from), and
// before tool calls when a message interrupts the turn. Elsewhere a
// message waits: the next model call comes first.
func checksInbox(cfg core.Config, a core.Action) bool {
	switch a.(type) {
	case core.RequestModelCall, core.Complete, core.RequestExternalToolCalls:
		return true
	case core.RequestToolCalls:
		return cfg.Conversation.OnMessage == core.OnInterrupt
	}
	return false
}

// foldInbox folds the oldest message of the run's inbox into the cursor's
// state, for the drive to checkpoint as a step of its own; folded is false
// when the inbox is empty.
func (r *Runner) foldInbox(h *holding, cur *cursor, cfg core.Config, x Redactor) (folded bool, err error) {
	var msgs []store.InboxMessage
	err = r.storeWrite(h, cur, "read the inbox", func(ctx context.Context) error {
		var err error
		msgs, err = r.store.Inbox(ctx, cur.id)
		return err
	})
	if err != nil || len(msgs) == 0 {
		return false, err
	}
	m := msgs[0]
	res := core.UserMessage{Content: x.String(m.Content)}
	next, err := core.Resume(cfg, cur.st, res)
	if err != nil {
		return false, fmt.Errorf("run %s: message %d: %w", cur.id, m.N, err)
	}
	cur.st, cur.result, cur.delivered = next, res, m.N
	cur.inboxDue = len(msgs) > 1 // the next one at the next step
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "message", Text: res.Content, Result: res}
	})
	return true, nil
}

// StartFrom is Start from a core.Request: an input, or a message history
// in the OpenAI chat format's roles (req.Messages), which core.Start
// checks (core.ErrBadHistory). A history over InputLimit, counting the
// text of its messages, is refused (ErrInputTooLarge), nothing stored.
func (r *Runner) StartFrom(ctx context.Context, ag *Agent, req core.Request) (Outcome, error) {
	ag = ag.current()
	if err := r.check(ag); err != nil {
		return Outcome{}, err
	}
	return r.startID(ctx, ag, r.opts.NewID(), req)
}

// startID creates run id of ag for req and drives it.
func (r *Runner) startID(ctx context.Context, ag *Agent, id string, req core.Request) (Outcome, error) {
	c, err := r.create(ctx, ag, id, req, true)
	if err != nil {
		return Outcome{}, err
	}
	return r.driveHeld(ctx, ag, &cursor{id: c.ID, st: c.st}, c.lease, c.acquired)
}

// CreateFrom is Create from a core.Request (see Runner.StartFrom).
func (p *Pool) CreateFrom(ctx context.Context, ag *Agent, req core.Request) (string, error) {
	r := p.r
	if err := r.check(ag); err != nil {
		return "", err
	}
	c, err := r.create(ctx, ag, r.opts.NewID(), req, false)
	if err != nil {
		return "", err
	}
	r.states.put(c.ID, 0, c.st)
	return c.ID, nil
}

// create stores run id of ag for req, its first state built from req:
// held by this runner's owner (held), or runnable.
func (r *Runner) create(ctx context.Context, ag *Agent, id string, req core.Request, held bool) (Created, error) {
	st, err := r.first(ag, req)
	if err != nil {
		return Created{}, err
	}
	c := Created{ID: id, acquired: time.Now(), st: st}
	run := store.NewRun{
		ID: id, Agent: ag.Config.Name, ConfigHash: core.ConfigHash(ag.Config),
		Config: ag.Source, Input: st.Request.Input, Initial: st,
	}
	if held {
		run.Owner, run.LeaseTTL = r.opts.Owner, r.opts.LeaseTTL
	}
	if c.lease, err = r.store.CreateRun(ctx, run); err != nil {
		return Created{}, fmt.Errorf("create run: %w", err)
	}
	return c, nil
}

// first is the first state of a run of ag for req: its input or history
// checked against InputLimit and redacted.
func (r *Runner) first(ag *Agent, req core.Request) (core.State, error) {
	x := NewRedactor(ag.Secrets)
	size := len(req.Input)
	if req.Messages != nil {
		msgs := make([]core.Message, len(req.Messages))
		for i, m := range req.Messages {
			size += len(m.Content)
			m.Content = x.String(m.Content)
			if len(m.Calls) > 0 {
				calls := make([]core.ToolCall, len(m.Calls))
				for j, c := range m.Calls {
					size += len(c.Args)
					c.Args = []byte(x.String(string(c.Args)))
					calls[j] = c
				}
				m.Calls = calls
			}
			msgs[i] = m
		}
		req.Messages = msgs
	}
	if limit := InputLimit(ag.Config); size > limit {
		return core.State{}, fmt.Errorf("%w: %d bytes, over the limit of %d (a quarter of the agent's limits.max_state_bytes)", ErrInputTooLarge, size, limit)
	}
	req.Input = x.String(req.Input)
	return core.Start(ag.Config, req)
}
