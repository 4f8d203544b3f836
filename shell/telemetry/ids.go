package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// A run is one trace, and every span in it has an id derived from the run
// id and the step (and call) it stands for, so the same run always gives
// the same ids: live, offline, and from every process that drove it.

// TraceID is the trace id of run runID.
func TraceID(runID string) trace.TraceID {
	var id trace.TraceID
	h := derive("trace", runID)
	copy(id[:], h[:])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// RunSpanID is the id of the run's invoke_agent span, the root of its
// trace.
func RunSpanID(runID string) trace.SpanID {
	return spanID(derive("run", runID))
}

// StepSpanID is the id of the span of step seq's own request: its model
// call, or its memory recall.
func StepSpanID(runID string, seq int) trace.SpanID {
	return spanID(derive("step", runID, strconv.Itoa(seq)))
}

// CallSpanID is the id of the execute_tool span of tool call callID,
// requested at step seq.
func CallSpanID(runID string, seq int, callID string) trace.SpanID {
	return spanID(derive("call", runID, strconv.Itoa(seq), callID))
}

// derive hashes its parts, each ended by a zero byte (ids and names hold
// none), under a domain of its own.
func derive(parts ...string) [sha256.Size]byte {
	b := []byte("stepwise.telemetry\x00")
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	return sha256.Sum256(b)
}

func spanID(h [sha256.Size]byte) trace.SpanID {
	var id trace.SpanID
	copy(id[:], h[:])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// IDGenerator gives the spans stepwise starts the ids derived above, and
// other spans random ids. Install it in an SDK TracerProvider
// (sdktrace.WithIDGenerator) for the derived span ids; without it a
// stepwise span still lands in its run's trace under its parent, but its
// own span id is random, and the run's root span is in a random trace.
type IDGenerator struct{}

type idsKey struct{}

type ids struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs asks the IDGenerator for these ids for the next span started
// with ctx.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, ids{t, s})
}

// NewIDs implements sdktrace.IDGenerator.
func (IDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if v, ok := ctx.Value(idsKey{}).(ids); ok {
		return v.trace, v.span
	}
	var t trace.TraceID
	for !t.IsValid() {
		_, _ = rand.Read(t[:])
	}
	return t, randomSpanID()
}

// NewSpanID implements sdktrace.IDGenerator.
func (IDGenerator) NewSpanID(ctx context.Context, t trace.TraceID) trace.SpanID {
	if v, ok := ctx.Value(idsKey{}).(ids); ok && v.trace == t {
		return v.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}
