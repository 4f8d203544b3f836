package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// Quoted writes what encoding/json reads back as the same string (with
// invalid UTF-8 as U+FFFD), and escapes no HTML.
func TestQuotedRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		var back string
		if err := json.Unmarshal([]byte(Quoted(s)), &back); err != nil {
			t.Fatalf("%q: %v", Quoted(s), err)
		}
		if back != strings.ToValidUTF8(s, string(utf8.RuneError)) && utf8.ValidString(s) {
			t.Fatalf("%q read back as %q", s, back)
		}
	})
	if got := Quoted("<a&b>\x01\n"); got != `"<a&b>\u0001\n"` {
		t.Fatalf("got %s", got)
	}
	if got := Quoted("\xff"); got != `"\ufffd"` {
		t.Fatalf("got %s", got)
	}
}

func TestExcerpt(t *testing.T) {
	for in, want := range map[string]string{"": "the end of the reply", "abc": `"abc"`, strings.Repeat("é", 30): `"` + strings.Repeat("é", 24) + `"...`} {
		if got := Excerpt(in); got != want {
			t.Errorf("Excerpt(%q) = %s, want %s", in, got, want)
		}
	}
}
