package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell"
)

// apiDoc is the part of openapi.json the tests read.
type apiDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

type schema struct {
	Ref        string             `json:"$ref"`
	AllOf      []*schema          `json:"allOf"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Items      *schema            `json:"items"`
	Enum       []string           `json:"enum"`
}

func readOpenAPI(t *testing.T) apiDoc {
	t.Helper()
	var doc apiDoc
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return doc
}

// TestOpenAPIDocumentsEveryRoute: the document's paths and methods are the
// server's routes, no more and no fewer.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := readOpenAPI(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range apiRoutes {
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("openapi.json documents\n  %v\nthe server serves\n  %v", documented, served)
	}
}

// TestOpenAPISchemasMatchTheJSON: each schema's properties are the JSON
// fields of the Go type the server encodes or decodes, and its required
// fields are those always present (no omitempty); the error codes are the
// server's.
func TestOpenAPISchemasMatchTheJSON(t *testing.T) {
	doc := readOpenAPI(t)
	s := doc.Components.Schemas
	types := map[string]any{
		"Run": apiRun{}, "Step": apiStep{}, "Call": apiCall{}, "InDoubt": apiInDoubt{}, "Holder": apiHolder{},
		"Counters": apiCounters{}, "Usage": apiUsage{}, "RunList": runList{}, "Replay": replayReport{},
		"CreateRun": createRequest{}, "Fork": forkRequest{},
		"ChatMessage": shell.ChatMessage{}, "ConversationMessage": apiMessage{}, "MessageList": messageList{},
		"PostMessage": messageRequest{}, "MessageEvent": messageEvent{},
	}
	for name, v := range types {
		sc := s[name]
		if sc == nil {
			t.Errorf("no schema %s", name)
			continue
		}
		checkSchema(t, doc, name, sc, reflect.TypeOf(v))
	}
	step := s["Step"].Properties
	checkSchema(t, doc, "Step.action", step["action"], reflect.TypeOf(apiAction{}))
	checkSchema(t, doc, "Step.result", step["result"], reflect.TypeOf(apiResult{}))
	checkSchema(t, doc, "Replay.divergence", s["Replay"].Properties["divergence"], reflect.TypeOf(apiDivergence{}))
	checkSchema(t, doc, "CreateRun.options", s["CreateRun"].Properties["options"], reflect.TypeOf(runOptions{}))
	checkSchema(t, doc, "ChatMessage.tool_calls", s["ChatMessage"].Properties["tool_calls"].Items, reflect.TypeOf(shell.ChatToolCall{}))
	codes := s["Error"].Properties["error"].Properties["code"].Enum
	if !slices.Equal(slices.Sorted(slices.Values(codes)), slices.Sorted(slices.Values(errorCodes))) {
		t.Errorf("documented error codes %v, the server's %v", codes, errorCodes)
	}
}

// checkSchema compares a schema (following $ref and allOf) with the JSON
// fields of type typ.
func checkSchema(t *testing.T, doc apiDoc, name string, sc *schema, typ reflect.Type) {
	t.Helper()
	if sc == nil {
		t.Errorf("%s: no schema", name)
		return
	}
	props, required := map[string]bool{}, map[string]bool{}
	var collect func(*schema)
	collect = func(sc *schema) {
		if sc.Ref != "" {
			collect(doc.Components.Schemas[strings.TrimPrefix(sc.Ref, "#/components/schemas/")])
		}
		for _, a := range sc.AllOf {
			collect(a)
		}
		for p := range sc.Properties {
			props[p] = true
		}
		for _, r := range sc.Required {
			required[r] = true
		}
	}
	collect(sc)
	fields, always := jsonFields(typ)
	for f := range fields {
		if !props[f] {
			t.Errorf("%s: the server's field %q is not documented", name, f)
		}
		if always[f] != required[f] && !(typ.Kind() == reflect.Struct && isRequest(typ)) {
			t.Errorf("%s: field %q: always present %v, documented required %v", name, f, always[f], required[f])
		}
	}
	for p := range props {
		if !fields[p] {
			t.Errorf("%s: documented property %q is not a field of %s", name, p, typ)
		}
	}
}

// isRequest reports whether typ is a request body (whose required fields
// the handler checks, not the decoder).
func isRequest(typ reflect.Type) bool {
	return typ == reflect.TypeOf(createRequest{}) || typ == reflect.TypeOf(forkRequest{}) || typ == reflect.TypeOf(runOptions{}) ||
		typ == reflect.TypeOf(messageRequest{})
}

// jsonFields lists a struct's JSON field names (embedded structs' too),
// and which are always encoded (no omitempty).
func jsonFields(typ reflect.Type) (fields, always map[string]bool) {
	fields, always = map[string]bool{}, map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous {
			ef, ea := jsonFields(f.Type)
			for k := range ef {
				fields[k], always[k] = true, ea[k]
			}
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = true
		always[name] = !strings.Contains(opts, "omitempty")
	}
	return fields, always
}
