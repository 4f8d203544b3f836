package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of stepwise's spans.
const ScopeName = "github.com/stepwise-agent/stepwise/shell/telemetry"

// Emit starts and ends s through tracer, with its times, its derived ids
// (given a TracerProvider with IDGenerator) and under its parent, which
// may have been emitted by another process, or not yet.
func Emit(ctx context.Context, tracer trace.Tracer, s Span) {
	ctx = withIDs(ctx, s.TraceID, s.SpanID)
	opts := []trace.SpanStartOption{trace.WithTimestamp(s.Start), trace.WithSpanKind(s.Kind), trace.WithAttributes(s.Attributes...)}
	if s.Parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: s.TraceID, SpanID: s.Parent, TraceFlags: trace.FlagsSampled, Remote: true,
		}))
	} else {
		// The run's root: never a child of whatever span ctx carries.
		opts = append(opts, trace.WithNewRoot())
	}
	for _, l := range s.Links {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: l}))
	}
	_, sp := tracer.Start(ctx, s.Name, opts...)
	if s.Status == codes.Error {
		sp.SetStatus(codes.Error, s.StatusMessage)
	}
	sp.End(trace.WithTimestamp(s.End))
}
