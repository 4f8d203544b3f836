package telemetry

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// WriteJSON writes spans as one OTLP/JSON ExportTraceServiceRequest on one
// line (the OTLP file format: what an OTLP/HTTP receiver takes with
// Content-Type application/json, and a collector's otlpjsonfile receiver
// reads), under a resource with the given attributes. Ids are hex, as
// OTLP/JSON has them; the same spans give the same bytes.
func WriteJSON(w io.Writer, resource []attribute.KeyValue, spans []Span) error {
	out := jsonRequest{ResourceSpans: []jsonResourceSpans{{
		Resource:   jsonResource{Attributes: jsonAttributes(resource)},
		ScopeSpans: []jsonScopeSpans{{Scope: jsonScope{Name: ScopeName}, Spans: make([]jsonSpan, 0, len(spans))}},
	}}}
	ss := &out.ResourceSpans[0].ScopeSpans[0]
	for _, s := range spans {
		js := jsonSpan{
			TraceID: s.TraceID.String(), SpanID: s.SpanID.String(), Name: s.Name, Kind: int(s.Kind),
			Start: strconv.FormatInt(s.Start.UnixNano(), 10), End: strconv.FormatInt(s.End.UnixNano(), 10),
			Attributes: jsonAttributes(s.Attributes),
		}
		if s.Parent.IsValid() {
			js.Parent = s.Parent.String()
		}
		for _, l := range s.Links {
			js.Links = append(js.Links, jsonLink{TraceID: l.TraceID().String(), SpanID: l.SpanID().String()})
		}
		if s.Status == codes.Error {
			js.Status = jsonStatus{Code: statusError, Message: s.StatusMessage}
		}
		ss.Spans = append(ss.Spans, js)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write OTLP JSON: %w", err)
	}
	return nil
}

// statusError is OTLP's STATUS_CODE_ERROR (the API's codes.Error is 1).
const statusError = 2

type jsonRequest struct {
	ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
}

type jsonResourceSpans struct {
	Resource   jsonResource     `json:"resource"`
	ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
}

type jsonResource struct {
	Attributes []jsonKeyValue `json:"attributes"`
}

type jsonScopeSpans struct {
	Scope jsonScope  `json:"scope"`
	Spans []jsonSpan `json:"spans"`
}

type jsonScope struct {
	Name string `json:"name"`
}

type jsonSpan struct {
	TraceID    string         `json:"traceId"`
	SpanID     string         `json:"spanId"`
	Parent     string         `json:"parentSpanId,omitempty"`
	Name       string         `json:"name"`
	Kind       int            `json:"kind"`
	Start      string         `json:"startTimeUnixNano"`
	End        string         `json:"endTimeUnixNano"`
	Attributes []jsonKeyValue `json:"attributes"`
	Links      []jsonLink     `json:"links,omitempty"`
	Status     jsonStatus     `json:"status"`
}

type jsonLink struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

type jsonStatus struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

type jsonKeyValue struct {
	Key   string    `json:"key"`
	Value jsonValue `json:"value"`
}

// jsonValue is an OTLP AnyValue; 64-bit integers are strings, as in the
// protobuf JSON mapping.
type jsonValue struct {
	String *string     `json:"stringValue,omitempty"`
	Int    *string     `json:"intValue,omitempty"`
	Bool   *bool       `json:"boolValue,omitempty"`
	Double *float64    `json:"doubleValue,omitempty"`
	Array  *jsonValues `json:"arrayValue,omitempty"`
}

type jsonValues struct {
	Values []jsonValue `json:"values"`
}

func jsonAttributes(kvs []attribute.KeyValue) []jsonKeyValue {
	out := make([]jsonKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, jsonKeyValue{Key: string(kv.Key), Value: valueJSON(kv.Value)})
	}
	return out
}

func valueJSON(v attribute.Value) jsonValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return jsonValue{Bool: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return jsonValue{Int: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return jsonValue{Double: &f}
	case attribute.STRINGSLICE:
		list := v.AsStringSlice()
		vals := make([]jsonValue, len(list))
		for i := range list {
			vals[i] = jsonValue{String: &list[i]}
		}
		return jsonValue{Array: &jsonValues{Values: vals}}
	}
	s := v.Emit()
	return jsonValue{String: &s}
}
