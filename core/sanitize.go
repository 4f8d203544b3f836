package core

import (
	"strings"
	"unicode/utf8"
)

// Sanitize returns res with every string made valid UTF-8 (invalid bytes
// become U+FFFD). Resume sanitizes what it folds in; a shell that stores a
// result next to the state it led to stores Sanitize(res), so the stored
// result is the one the core saw and decodes again.
func Sanitize(res Result) Result { return sanitize(res) }

// sanitize makes every string of a result valid UTF-8 (invalid bytes become
// U+FFFD), so any state the core builds can be encoded and decoded: a tool
// may print binary, and the strict decoder rejects invalid UTF-8.
func sanitize(res Result) Result {
	if validResult(res) {
		return res // the common case: nothing to copy
	}
	switch r := res.(type) {
	case ModelReply:
		r.Text, r.FinishReason, r.Error = clean(r.Text), clean(r.FinishReason), clean(r.Error)
		if len(r.Calls) > 0 {
			calls := make([]NativeCall, len(r.Calls))
			for i, c := range r.Calls {
				calls[i] = NativeCall{ID: clean(c.ID), Name: clean(c.Name), Arguments: clean(c.Arguments)}
			}
			r.Calls = calls
		}
		return r
	case ToolResults:
		out := make([]ToolResult, len(r.Results))
		for i, x := range r.Results {
			out[i] = ToolResult{CallID: clean(x.CallID), Output: clean(x.Output), Error: clean(x.Error), Sources: cleanAll(x.Sources), Cached: x.Cached, Attachments: cleanAttachments(x.Attachments), Spent: x.Spent}
		}
		return ToolResults{Results: out}
	case MemoryHits:
		hits := make([]MemoryHit, len(r.Hits))
		for i, h := range r.Hits {
			hits[i] = MemoryHit{Entity: cleanEntity(h.Entity), Score: h.Score}
		}
		return MemoryHits{Hits: hits, Error: clean(r.Error)}
	case MemoryCreated:
		return MemoryCreated{Entities: cleanAll(r.Entities), Relations: r.Relations, Error: clean(r.Error)}
	case MemoryTraversed:
		ents := make([]Entity, len(r.Entities))
		for i, e := range r.Entities {
			ents[i] = cleanEntity(e)
		}
		rels := make([]Relation, len(r.Relations))
		for i, x := range r.Relations {
			rels[i] = Relation{From: clean(x.From), To: clean(x.To), Type: clean(x.Type)}
		}
		return MemoryTraversed{Entities: ents, Relations: rels, Error: clean(r.Error)}
	case UserMessage:
		return UserMessage{Content: clean(r.Content)}
	case Cancelled:
		return Cancelled{Reason: clean(r.Reason)}
	}
	return res
}

func clean(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func cleanAll(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = clean(s)
	}
	return out
}

func cleanEntity(e Entity) Entity {
	return Entity{Name: clean(e.Name), Type: clean(e.Type), Observations: cleanAll(e.Observations)}
}

// validResult reports whether every string of the common results is
// valid UTF-8 already (false for the kinds it does not check).
func validResult(res Result) bool {
	switch r := res.(type) {
	case ModelReply:
		if !utf8.ValidString(r.Text) || !utf8.ValidString(r.FinishReason) || !utf8.ValidString(r.Error) {
			return false
		}
		for _, c := range r.Calls {
			if !utf8.ValidString(c.ID) || !utf8.ValidString(c.Name) || !utf8.ValidString(c.Arguments) {
				return false
			}
		}
		return true
	case ToolResults:
		for _, x := range r.Results {
			if !utf8.ValidString(x.CallID) || !utf8.ValidString(x.Output) || !utf8.ValidString(x.Error) {
				return false
			}
			for _, s := range x.Sources {
				if !utf8.ValidString(s) {
					return false
				}
			}
			for _, a := range x.Attachments {
				if !utf8.ValidString(a.MIME) {
					return false
				}
			}
		}
		return true
	}
	return false
}
