package sqlite

import (
	"strings"
	"testing"
)

// TestQueryTerms: a memory query becomes FTS5 terms, each quoted, so that
// no query is FTS5 syntax.
func TestQueryTerms(t *testing.T) {
	for q, want := range map[string]string{
		`"hello" world*`:       `"hello" OR "world"`,
		`AND or -x`:            `"AND" OR "or" OR "x"`,
		`Hello hello HELLO`:    `"Hello"`,
		`café 東京 a_b`:          `"café" OR "東京" OR "a" OR "b"`,
		`*** "" -- 🙂`:          ``,
		`it's foo's`:           `"it" OR "s" OR "foo"`,
		"tab\tnew\nline":       `"tab" OR "new" OR "line"`,
		`"unbalanced (paren`:   `"unbalanced" OR "paren"`,
		`NEAR(a b) x:y ^z`:     `"NEAR" OR "a" OR "b" OR "x" OR "y" OR "z"`,
		`e\u0301 combining`:    `"e" OR "u0301" OR "combining"`,
		"e\u0301 combining2":   "\"e\u0301\" OR \"combining2\"",
		`12 3.5 v2`:            `"12" OR "3" OR "5" OR "v2"`,
		strings.Repeat("w", 5): `"wwwww"`,
	} {
		if got := ftsQuery(queryTerms(q)); got != want {
			t.Errorf("%q: %s, want %s", q, got, want)
		}
	}
}
