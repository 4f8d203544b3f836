package core

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Summary says how a tool's result is shortened for the model (the seed's
// "top 3 items, 200 characters each, at most 900"). It applies to a result
// that is list-like JSON: an array, or an object with an array among its
// members. The model then reads one line per item, at most Items of them,
// each cut to ItemChars characters, the whole cut to MaxBytes bytes:
//
//	results: 12 items, the first 3:
//	1. {"title":"Solar panels","url":"https://a.example"}
//	2. {"title":"Heat pumps","url":"https://b.example"}
//	3. {"title":"Wind","url":"https://c.example"}
//	total: 12
//
// Any other result is cut to MaxBytes bytes, with the marker the byte cap
// uses. Failed calls' errors are not summarized. The zero Summary is off:
// results are cut to the tool's byte cap (Tool.MaxResultBytes,
// Limits.ToolResultBytes) as always.
//
// The summary is what the run's state records and the model reads; the
// store keeps the tool's full result with the step, so a replay summarizes
// it again to the same bytes.
type Summary struct {
	// Items is how many items of a list the model reads, from the first
	// (0: all of them).
	Items int `json:"items,omitempty"`
	// ItemChars cuts each item, and each other member's value, to this many
	// characters, marking the cut with "…" (0: not cut).
	ItemChars int `json:"item_chars,omitempty"`
	// MaxBytes caps the whole text the model reads (0: the tool's byte cap).
	// It is a hard cap: no summary is longer.
	MaxBytes int `json:"max_bytes,omitempty"`
	// Label, when set, writes a list on one line the way the strict JSON
	// loop's design does, "LABEL: item | item | item", an object item as
	// the values of its members joined by " - " (title - url - snippet).
	// Empty: the tool's SummaryLabel, else numbered lines.
	Label string `json:"label,omitempty"`
}

// on reports whether the summary shapes results at all.
func (s Summary) on() bool { return s != Summary{} }

// problems names the negative settings of a summary at where ("summary",
// `tools[2] "search": summary`).
func (s Summary) problems(where string) []string {
	var errs []string
	for _, f := range []struct {
		key string
		v   int
	}{{"items", s.Items}, {"item_chars", s.ItemChars}, {"max_bytes", s.MaxBytes}} {
		if f.v < 0 {
			errs = append(errs, fmt.Sprintf("%s.%s is negative", where, f.key))
		}
	}
	return errs
}

// summary is the summary that applies to t's results: its own, else the
// agent's; with no label, the one t declares.
func (c Config) summary(t Tool) Summary {
	s := c.Summary
	if t.Summary != nil {
		s = *t.Summary
	}
	if s.on() && s.Label == "" {
		s.Label = t.SummaryLabel
	}
	return s
}

// modelOutput is what the model reads of a successful call's output: the
// output summarized when t has a summary, else cut to t's byte cap.
func (c Config) modelOutput(t Tool, out string) string {
	s := c.summary(t)
	if !s.on() {
		return truncate(out, c.resultCap(t))
	}
	return summarize(out, s, pick(s.MaxBytes, c.resultCap(t)))
}

// summarize shapes a result by s, within maxBytes bytes.
func summarize(out string, s Summary, maxBytes int) string {
	text, ok := listSummary(out, s)
	if !ok {
		text = out
	}
	return truncateHard(text, maxBytes)
}

// listSummary writes a list-like JSON result as lines; false when the
// result is not list-like JSON.
func listSummary(out string, s Summary) (string, bool) {
	raw := strings.TrimSpace(out)
	if raw == "" || (raw[0] != '[' && raw[0] != '{') || !json.Valid([]byte(raw)) {
		return "", false
	}
	var b strings.Builder
	if raw[0] == '[' {
		if s.Label != "" {
			writeLabeled(&b, s.Label, jsonMembers(raw), s)
			return b.String(), true
		}
		writeItems(&b, jsonMembers(raw), s)
		return b.String(), true
	}
	members := jsonMembers(raw)
	listLike := false
	for _, m := range members {
		if strings.HasPrefix(m.raw, "[") {
			listLike = true
			break
		}
	}
	if !listLike {
		return "", false
	}
	for i, m := range members {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(oneLine(m.key, 0))
		b.WriteString(": ")
		if strings.HasPrefix(m.raw, "[") {
			writeItems(&b, jsonMembers(m.raw), s)
			continue
		}
		b.WriteString(itemText(m.raw, s.ItemChars))
	}
	return b.String(), true
}

// writeLabeled writes the items shown on one line: "LABEL: a | b | c" (or
// "LABEL: none").
func writeLabeled(b *strings.Builder, label string, items []jsonMember, s Summary) {
	shown := len(items)
	if s.Items > 0 && s.Items < shown {
		shown = s.Items
	}
	b.WriteString(oneLine(label, 0))
	b.WriteString(":")
	if shown == 0 {
		b.WriteString(" none")
		return
	}
	for i, it := range items[:shown] {
		if i > 0 {
			b.WriteString(" |")
		}
		b.WriteByte(' ')
		text := strings.TrimSpace(it.raw)
		if strings.HasPrefix(text, "{") {
			parts := []string{}
			for _, m := range jsonMembers(text) {
				if v := itemText(m.raw, 0); v != "" {
					parts = append(parts, v)
				}
			}
			b.WriteString(oneLine(strings.Join(parts, " - "), s.ItemChars))
			continue
		}
		b.WriteString(itemText(it.raw, s.ItemChars))
	}
}

// writeItems writes a header ("12 items, the first 3:") and one numbered
// line per item shown.
func writeItems(b *strings.Builder, items []jsonMember, s Summary) {
	shown := len(items)
	if s.Items > 0 && s.Items < shown {
		shown = s.Items
	}
	switch {
	case len(items) == 0:
		b.WriteString("no items")
		return
	case shown < len(items):
		fmt.Fprintf(b, "%s, the first %d:", plural(len(items), "item"), shown)
	default:
		fmt.Fprintf(b, "%s:", plural(len(items), "item"))
	}
	for i, it := range items[:shown] {
		fmt.Fprintf(b, "\n%d. %s", i+1, itemText(it.raw, s.ItemChars))
	}
}

// itemText is one value on one line: a string as its text, anything else
// as compact JSON, runs of white space made one space, cut to chars
// characters (0: not cut).
func itemText(raw string, chars int) string {
	text, ok := jsonStringOf(raw)
	if !ok {
		text = compactJSONText(raw)
	}
	return oneLine(text, chars)
}

// oneLine collapses white space runs to one space and cuts s to chars
// characters, marking a cut with "…" (chars 0: not cut).
func oneLine(s string, chars int) string {
	var b strings.Builder
	n, space := 0, false
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			if chars > 0 && n == chars {
				b.WriteString("…")
				return b.String()
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if chars > 0 && n == chars {
			b.WriteString("…")
			return b.String()
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// truncateHard is truncate, except that when max is too small for the
// marker the text is simply cut: the result is never longer than max bytes
// (max <= 0: not cut).
func truncateHard(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	if t := truncate(s, max); len(t) <= max {
		return t
	}
	keep := max
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep]
}
