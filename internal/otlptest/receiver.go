// Package otlptest is an in-process OTLP/HTTP trace receiver for tests. It
// decodes export requests as a collector does: protobuf
// (application/x-protobuf) or OTLP/JSON (application/json, hex ids),
// gzip-encoded or not, on POST /v1/traces; anything else is refused with
// the status a collector gives.
package otlptest

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Receiver is a running OTLP/HTTP receiver; its URL is the base URL an
// exporter's OTEL_EXPORTER_OTLP_ENDPOINT takes.
type Receiver struct {
	URL string

	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	types    []string
}

// Start starts a receiver, stopped when the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msg := &coltracepb.ExportTraceServiceRequest{}
	ct := req.Header.Get("Content-Type")
	switch ct {
	case "application/x-protobuf":
		err = proto.Unmarshal(data, msg)
	case "application/json":
		err = unmarshalJSON(data, msg)
	default:
		http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, msg)
	r.types = append(r.types, ct)
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	if ct == "application/json" {
		out = []byte("{}")
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(out)
}

// unmarshalJSON decodes OTLP/JSON: the protobuf JSON mapping, except that
// trace and span ids are hex, not base64.
func unmarshalJSON(data []byte, msg proto.Message) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if err := hexIDs(v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(b, msg)
}

func hexIDs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				b, err := hex.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q is not hex: %v", k, s, err)
				}
				v[k] = base64.StdEncoding.EncodeToString(b)
				continue
			}
			if err := hexIDs(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := hexIDs(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// ContentTypes lists the content type of each request received.
func (r *Receiver) ContentTypes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.types)
}

// Span is a received span, flattened for comparison: ids in hex,
// attribute values as text (integers in decimal, arrays as JSON).
type Span struct {
	TraceID, SpanID, Parent string
	Name                    string
	Kind                    int
	Start, End              uint64
	Attributes              map[string]string
	Status                  int
	StatusMessage           string
	Links                   []string // "traceid/spanid"
	Resource                map[string]string
	Scope                   string
}

// Spans returns the spans received so far, in the order received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Span
	for _, req := range r.requests {
		for _, rs := range req.ResourceSpans {
			res := attributes(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{
						TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId), Parent: hex.EncodeToString(s.ParentSpanId),
						Name: s.Name, Kind: int(s.Kind), Start: s.StartTimeUnixNano, End: s.EndTimeUnixNano,
						Attributes: attributes(s.Attributes), Status: int(s.GetStatus().GetCode()), StatusMessage: s.GetStatus().GetMessage(),
						Resource: res, Scope: ss.GetScope().GetName(),
					}
					for _, l := range s.Links {
						sp.Links = append(sp.Links, hex.EncodeToString(l.TraceId)+"/"+hex.EncodeToString(l.SpanId))
					}
					out = append(out, sp)
				}
			}
		}
	}
	return out
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = text(kv.Value)
	}
	return m
}

func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		list := make([]string, 0, len(x.ArrayValue.Values))
		for _, e := range x.ArrayValue.Values {
			list = append(list, text(e))
		}
		b, _ := json.Marshal(list)
		return string(b)
	}
	return fmt.Sprintf("%v", v)
}
