package core

import (
	"testing"
	"unicode/utf8"
)

// FuzzSummarize: whatever a tool returns, its summary never panics, never
// exceeds its cap and stays valid UTF-8 (results are made valid UTF-8
// before they reach it).
func FuzzSummarize(f *testing.F) {
	f.Add(`{"results":[{"title":"a"},"b",3],"total":3}`, 2, 5, 40)
	f.Add(`["é😀", "x"]`, 0, 1, 3)
	f.Add("plain text", 1, 0, 0)
	f.Fuzz(func(t *testing.T, out string, items, chars, maxBytes int) {
		out = clean(out)
		s := Summary{Items: items % 50, ItemChars: chars % 500, MaxBytes: maxBytes % 5000}
		if s.Items < 0 || s.ItemChars < 0 || s.MaxBytes < 0 {
			return // Validate refuses negative settings
		}
		got := summarize(out, s, pick(s.MaxBytes, 1000))
		if len(got) > pick(s.MaxBytes, 1000) || !utf8.ValidString(got) {
			t.Fatalf("summarize(%q, %+v) = %q", out, s, got)
		}
	})
}
