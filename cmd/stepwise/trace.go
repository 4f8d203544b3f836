package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/telemetry"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	c := &command{name: "trace", args: "RUN_ID... [--send] [--content]", summary: "write a run as an OpenTelemetry trace (OTLP JSON), or send it",
		help: `Writes each run as an OpenTelemetry trace, one OTLP/JSON request per line, following
the GenAI semantic conventions: an invoke_agent span for the run, a chat span per
model call (tokens in gen_ai.usage.*), an execute_tool span per tool call (with
gen_ai.tool.call.id), a retrieval span per memory recall. Times come from the stored
steps; ids are derived from the run id and the step, so a run always gives the same
trace, and the same ids as the spans run, resume, fork and serve emit live when
OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. A run not
ended yet gives what it has done so far.

Message content (messages, tool arguments and results, as stored, secrets redacted)
is left out unless --content or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
With --send, the traces go to the OTLP endpoint the OTEL_EXPORTER_OTLP_* variables
name (OTLP/HTTP protobuf) and their trace ids are printed.`}
	c.run = func(e *env, args []string) int {
		fs := e.flags(c)
		db := e.dbFlag(fs)
		send := fs.Bool("send", false, "send to the OTLP endpoint of $OTEL_EXPORTER_OTLP_ENDPOINT instead of printing")
		content := fs.Bool("content", false, "record message content (default $OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)")
		pos, code := e.parse(c, fs, args, 1, -1)
		if code >= 0 {
			return code
		}
		withContent := *content || telemetry.ContentFromEnv(e.getenv)
		ctx, st, done, code := e.readSession(c.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		for _, id := range pos {
			run, err := telemetry.ReadRun(ctx, st, id)
			if err != nil {
				return e.storeErr(c.name, err)
			}
			spans := run.Spans(withContent)
			if !*send {
				if err := telemetry.WriteJSON(e.stdout, telemetry.JSONResource(e.getenv), spans); err != nil {
					fmt.Fprintf(e.stderr, "stepwise trace: %v\n", err)
					return exitInternal
				}
				continue
			}
			if code := e.sendTrace(ctx, spans); code >= 0 {
				return code
			}
			fmt.Fprintln(e.stdout, telemetry.TraceID(id))
		}
		return 0
	}
	register(c)
}

// sendTrace sends one run's spans to the OTLP endpoint the environment
// names.
func (e *env) sendTrace(ctx context.Context, spans []telemetry.Span) int {
	exp, err := telemetry.ExporterFromEnv(ctx, e.getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise trace: %v\n", err)
		return exitUsage
	}
	res, err := telemetry.ResourceFromEnv(ctx)
	if err == nil {
		err = telemetry.Send(ctx, exp, res, spans)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise trace: %v\n", err)
		return exitInternal
	}
	return -1
}

// tracer is the live tracing observer when the environment asks for
// traces (see telemetry.Enabled); the spans left are sent when the
// command ends. nil when it does not ask.
func (e *env) tracer(st store.Runs) (shell.Observer, int) {
	if !telemetry.Enabled(e.getenv) {
		return nil, -1
	}
	// The provider outlives the command's context: it sends what is left
	// when the command ends.
	tp, err := telemetry.ProviderFromEnv(context.Background(), e.getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "stepwise: telemetry: %v\n", err)
		return nil, exitUsage
	}
	report := func(err error) { fmt.Fprintf(e.stderr, "stepwise: telemetry: %v\n", err) }
	otel.SetErrorHandler(otel.ErrorHandlerFunc(report))
	e.atExit = append(e.atExit, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			report(err)
		}
	})
	return telemetry.NewObserver(tp, st, telemetry.Options{Content: telemetry.ContentFromEnv(e.getenv), OnError: report}), -1
}

// exit runs what the command registered to run at its end.
func (e *env) exit() {
	for i := len(e.atExit) - 1; i >= 0; i-- {
		e.atExit[i]()
	}
	e.atExit = nil
}
