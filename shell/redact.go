package shell

import (
	"sort"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

// minSecretLen is the shortest value redacted: shorter values would match
// ordinary text (an API key of "x" would blank every x).
const minSecretLen = 4

// Redactor replaces secret values by a marker naming their variable,
// "[redacted:NAME]". The zero Redactor changes nothing.
type Redactor struct {
	r *strings.Replacer
	// values are the secrets' values, longest first (see StreamRedactor).
	values []string
}

// NewRedactor redacts the given secrets (values shorter than 4 bytes are
// left alone). Longer values are replaced first, so a secret that
// contains another is redacted whole.
func NewRedactor(secrets []Secret) Redactor {
	var list []Secret
	for _, s := range secrets {
		if len(s.Value) >= minSecretLen {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return Redactor{}
	}
	sort.SliceStable(list, func(i, j int) bool { return len(list[i].Value) > len(list[j].Value) })
	pairs := make([]string, 0, 2*len(list))
	values := make([]string, len(list))
	for i, s := range list {
		pairs = append(pairs, s.Value, "[redacted:"+s.Name+"]")
		values[i] = s.Value
	}
	return Redactor{r: strings.NewReplacer(pairs...), values: values}
}

// String redacts s.
func (x Redactor) String(s string) string {
	if x.r == nil || s == "" {
		return s
	}
	return x.r.Replace(s)
}

func (x Redactor) all(list []string) []string {
	if x.r == nil || list == nil {
		return list
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = x.String(s)
	}
	return out
}

func (x Redactor) entity(e core.Entity) core.Entity {
	return core.Entity{Name: x.String(e.Name), Type: x.String(e.Type), Observations: x.all(e.Observations)}
}

// Result redacts every string of a result: what the model sees of it and
// what the store keeps are the same redacted text.
func (x Redactor) Result(res core.Result) core.Result {
	if x.r == nil {
		return res
	}
	switch r := res.(type) {
	case core.ModelReply:
		r.Text, r.Error, r.FinishReason = x.String(r.Text), x.String(r.Error), x.String(r.FinishReason)
		if len(r.Calls) > 0 {
			calls := make([]core.NativeCall, len(r.Calls))
			for i, c := range r.Calls {
				calls[i] = core.NativeCall{ID: x.String(c.ID), Name: x.String(c.Name), Arguments: x.String(c.Arguments)}
			}
			r.Calls = calls
		}
		if r.Opaque != nil {
			// The provider's data is JSON text: a marker in place of a
			// secret keeps it JSON.
			r.Opaque = &core.Opaque{Provider: r.Opaque.Provider, Data: []byte(x.String(string(r.Opaque.Data)))}
		}
		return r
	case core.ToolResults:
		out := make([]core.ToolResult, len(r.Results))
		for i, t := range r.Results {
			out[i] = x.ToolResult(t)
		}
		return core.ToolResults{Results: out}
	case core.MemoryHits:
		hits := make([]core.MemoryHit, len(r.Hits))
		for i, h := range r.Hits {
			hits[i] = core.MemoryHit{Entity: x.entity(h.Entity), Score: h.Score}
		}
		return core.MemoryHits{Hits: hits, Error: x.String(r.Error)}
	case core.MemoryCreated:
		return core.MemoryCreated{Entities: x.all(r.Entities), Relations: r.Relations, Error: x.String(r.Error)}
	case core.MemoryTraversed:
		ents := make([]core.Entity, len(r.Entities))
		for i, e := range r.Entities {
			ents[i] = x.entity(e)
		}
		rels := make([]core.Relation, len(r.Relations))
		for i, rel := range r.Relations {
			rels[i] = core.Relation{From: x.String(rel.From), To: x.String(rel.To), Type: x.String(rel.Type)}
		}
		return core.MemoryTraversed{Entities: ents, Relations: rels, Error: x.String(r.Error)}
	case core.UserMessage:
		return core.UserMessage{Content: x.String(r.Content)}
	case core.Cancelled:
		return core.Cancelled{Reason: x.String(r.Reason)}
	}
	return res
}

// ToolResult redacts one tool result.
func (x Redactor) ToolResult(t core.ToolResult) core.ToolResult {
	if x.r == nil {
		return t
	}
	// Attachments are binary: they pass as they are; Transient and Cached
	// too.
	t.Output, t.Error, t.Sources = x.String(t.Output), x.String(t.Error), x.all(t.Sources)
	return t
}
