package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// Options tune an Observer.
type Options struct {
	// Content records message content on the spans: the messages a model
	// was sent and answered, tool arguments and results, the run's input
	// and answer (all as stored: secrets redacted). Off by default, as
	// the GenAI conventions ask.
	Content bool
	// OnError receives what went wrong reading the store for a span (nil:
	// otel.Handle).
	OnError func(error)
}

// Observer emits a run's spans as the runner reports its calls (a
// shell.Observer): a chat span per model call, an execute_tool span per
// tool call (external ones when the caller's answer arrives), a retrieval
// span per memory recall, and, when the run ends, its invoke_agent span,
// built from the store as `stepwise trace` builds it. Every span has the
// id `stepwise trace` gives it; times are the ones measured here. It is
// safe for concurrent use.
type Observer struct {
	tracer trace.Tracer
	store  store.Runs
	opts   Options

	mu     sync.Mutex
	agents map[string]agentInfo // by run id, while a drive goes on
}

// storeTimeout bounds each store read an event needs.
const storeTimeout = 10 * time.Second

// maxAgents bounds the agents remembered for runs being driven; past it
// the memory is cleared (a drive that ends without an event, by a hand-off
// or a lost lease, leaves its entry behind).
const maxAgents = 4096

// NewObserver emits spans through tp's tracer, reading from st what the
// events do not carry (the run's agent, its totals when it ends).
func NewObserver(tp trace.TracerProvider, st store.Runs, opts Options) *Observer {
	return &Observer{tracer: tp.Tracer(ScopeName), store: st, opts: opts, agents: map[string]agentInfo{}}
}

// Event implements shell.Observer.
func (o *Observer) Event(e shell.Event) {
	switch e.Kind {
	case "model", "tool", "memory", "results", "complete", "fail":
	case "external", "interrupted", "stalled":
		o.forget(e.RunID)
		return
	default:
		return
	}
	// The Observer interface carries no context: each store read is
	// bounded by storeTimeout instead.
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := o.event(ctx, e); err != nil {
		o.fail(fmt.Errorf("trace run %s step %d (%s): %w", e.RunID, e.Seq, e.Kind, err))
	}
}

func (o *Observer) event(ctx context.Context, e shell.Event) error {
	b, err := o.builder(ctx, e.RunID)
	if err != nil {
		return err
	}
	end := e.Start.Add(e.Duration)
	if e.Seq == 0 && e.Kind != "complete" && e.Kind != "fail" {
		// A fork performing again the request it was forked at (its step
		// 0): the stored run cannot tell that from a result given to the
		// fork, so neither trace has a span for it.
		return nil
	}
	switch e.Kind {
	case "model":
		req, ok1 := e.Request.(core.RequestModelCall)
		reply, ok2 := e.Result.(core.ModelReply)
		if ok1 && ok2 {
			Emit(ctx, o.tracer, b.chat(e.Seq, req, reply, e.Start, end))
		}
	case "tool":
		if res, ok := e.Result.(core.ToolResults); ok && len(res.Results) == 1 {
			Emit(ctx, o.tracer, b.tool(e.Seq, e.Call, res.Results[0], false, e.Start, end))
		}
	case "memory":
		Emit(ctx, o.tracer, b.memory(e.Seq, e.Request, e.Result, e.Start, end))
	case "results":
		return o.answered(ctx, b, e)
	case "complete", "fail":
		defer o.forget(e.RunID)
		info, err := o.store.Run(ctx, e.RunID)
		if err != nil {
			return err
		}
		last, err := o.store.LoadLatest(ctx, e.RunID)
		if err != nil {
			return err
		}
		Emit(ctx, o.tracer, b.root(info, last.State, last.Created))
	}
	return nil
}

// answered emits the spans of the external calls a caller just answered:
// from the pause (its step's checkpoint) to now.
func (o *Observer) answered(ctx context.Context, b builder, e shell.Event) error {
	res, ok := e.Result.(core.ToolResults)
	if !ok {
		return nil
	}
	now := time.Now()
	rec, err := o.store.LoadStep(ctx, e.RunID, e.Seq)
	if err != nil {
		return err
	}
	a, ok := rec.Action.(core.RequestExternalToolCalls)
	if !ok {
		return nil
	}
	calls := appendToolCalls(nil, e.Seq, a, a.Calls, res, true, rec.Created, now)
	for _, c := range calls {
		Emit(ctx, o.tracer, b.spanOf(c))
	}
	return nil
}

// builder is the span builder for a run, its agent read from the store
// once per drive.
func (o *Observer) builder(ctx context.Context, runID string) (builder, error) {
	o.mu.Lock()
	a, ok := o.agents[runID]
	o.mu.Unlock()
	if !ok {
		info, err := o.store.Run(ctx, runID)
		if err != nil {
			return builder{}, err
		}
		a = agentOf(info.Agent, info.Config)
		o.mu.Lock()
		if len(o.agents) >= maxAgents {
			clear(o.agents)
		}
		o.agents[runID] = a
		o.mu.Unlock()
	}
	return builder{runID: runID, agent: a, content: o.opts.Content}, nil
}

func (o *Observer) forget(runID string) {
	o.mu.Lock()
	delete(o.agents, runID)
	o.mu.Unlock()
}

func (o *Observer) fail(err error) {
	if o.opts.OnError != nil {
		o.opts.OnError(err)
		return
	}
	otel.Handle(err)
}
