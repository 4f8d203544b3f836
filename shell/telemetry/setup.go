package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The environment variables read here; the OTLP exporter reads the rest
// of OTEL_EXPORTER_OTLP_* itself (headers, timeout, compression,
// certificates), and the SDK OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvTracesExporter  = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled     = "OTEL_SDK_DISABLED"
	EnvServiceName     = "OTEL_SERVICE_NAME"
	EnvCaptureContent  = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
	defaultServiceName = "stepwise"
)

// ErrNoEndpoint: traces were asked to be sent with no OTLP endpoint set.
var ErrNoEndpoint = errors.New("no OTLP endpoint: set " + EnvEndpoint + " (or " + EnvTracesEndpoint + ")")

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set, the SDK is not disabled (OTEL_SDK_DISABLED) and the
// traces exporter is not "none" (OTEL_TRACES_EXPORTER).
func Enabled(getenv func(string) string) bool {
	if getenv(EnvEndpoint) == "" && getenv(EnvTracesEndpoint) == "" {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	return strings.TrimSpace(getenv(EnvTracesExporter)) != "none"
}

// ContentFromEnv reports whether message content is to be recorded:
// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
func ContentFromEnv(getenv func(string) string) bool {
	return strings.EqualFold(strings.TrimSpace(getenv(EnvCaptureContent)), "true")
}

// ExporterFromEnv is the official OTLP/HTTP (protobuf) trace exporter,
// configured by the OTEL_EXPORTER_OTLP_* variables. Another protocol or
// exporter asked for is an error that names it. getenv is what is checked
// here; the exporter reads the process's environment itself, so the two
// must agree (os.Getenv, as the CLI passes).
func ExporterFromEnv(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	if getenv(EnvEndpoint) == "" && getenv(EnvTracesEndpoint) == "" {
		return nil, ErrNoEndpoint
	}
	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			if v != "http/protobuf" {
				return nil, fmt.Errorf("%s=%s: stepwise sends traces over OTLP http/protobuf only", name, v)
			}
			break
		}
	}
	if v := strings.TrimSpace(getenv(EnvTracesExporter)); v != "" && v != "otlp" && v != "none" {
		return nil, fmt.Errorf("%s=%s: stepwise exports traces with otlp only", EnvTracesExporter, v)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	return exp, nil
}

// ResourceFromEnv is the resource spans are exported under: service.name
// "stepwise" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says
// otherwise, and the SDK's own attributes.
func ResourceFromEnv(ctx context.Context) (*resource.Resource, error) {
	env, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	return resource.Merge(resource.NewSchemaless(attribute.String("service.name", defaultServiceName)), env)
}

// JSONResource is the resource `stepwise trace` writes: service.name
// alone (OTEL_SERVICE_NAME, else "stepwise"), so that a run always gives
// the same bytes.
func JSONResource(getenv func(string) string) []attribute.KeyValue {
	name := getenv(EnvServiceName)
	if name == "" {
		name = defaultServiceName
	}
	return []attribute.KeyValue{attribute.String("service.name", name)}
}

// NewTracerProvider is an SDK TracerProvider that batches spans to exp,
// under res, with the derived ids (IDGenerator). The caller shuts it
// down, which sends what is left.
func NewTracerProvider(exp sdktrace.SpanExporter, res *resource.Resource) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(IDGenerator{}))
}

// ProviderFromEnv is NewTracerProvider with the exporter and resource the
// environment configures (see ExporterFromEnv), for the CLI and `stepwise
// serve`.
func ProviderFromEnv(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	exp, err := ExporterFromEnv(ctx, getenv)
	if err != nil {
		return nil, err
	}
	res, err := ResourceFromEnv(ctx)
	if err != nil {
		return nil, err
	}
	return NewTracerProvider(exp, res), nil
}

// Send exports spans at once through exp (then shuts it down), under res:
// what `stepwise trace --send` does. Unlike a batching provider, it
// returns the exporter's error.
func Send(ctx context.Context, exp sdktrace.SpanExporter, res *resource.Resource, spans []Span) error {
	col := &collector{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(col), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(IDGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tracer := tp.Tracer(ScopeName)
	for _, s := range spans {
		Emit(ctx, tracer, s)
	}
	err := exp.ExportSpans(ctx, col.spans)
	if serr := exp.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("send the trace: %w", err)
	}
	return nil
}

// collector keeps the spans that end, in order (Send emits from one
// goroutine).
type collector struct{ spans []sdktrace.ReadOnlySpan }

func (c *collector) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *collector) OnEnd(s sdktrace.ReadOnlySpan)                   { c.spans = append(c.spans, s) }
func (c *collector) Shutdown(context.Context) error                  { return nil }
func (c *collector) ForceFlush(context.Context) error                { return nil }
