package helpers

import (
	"reflect"
	"strings"
	"testing"
)

// checkSourceText: with Options.SourceText a reply parses whenever it
// does without (a refusal with it is one without); one with no warning
// parses to the same calls; every warning is an argument passed as text;
// its program checks and runs without panicking.
func checkSourceText(t *testing.T, text string, plain Parsed, plainErr error) {
	p, err := sourceText.Parse(text, testTools)
	if err != nil {
		if e, ok := err.(*Error); !ok || plainErr == nil || e.Offset < 0 || e.Offset > len(text) {
			t.Fatalf("SourceText.Parse(%q): %#v, without it %v", text, err, plainErr)
		}
		return
	}
	if len(p.Warnings) == 0 {
		if plainErr != nil || !reflect.DeepEqual(p.Calls, plain.Calls) || !reflect.DeepEqual(p.Raw, plain.Raw) || p.Text != plain.Text || (p.Program == nil) != (plain.Program == nil) {
			t.Fatalf("SourceText.Parse(%q) without a warning: %+v, without it %+v %v", text, p, plain, plainErr)
		}
	}
	for _, w := range p.Warnings {
		if !strings.HasSuffix(w, " is outside the helpers subset; passed as its source text") {
			t.Fatalf("SourceText.Parse(%q): warning %q", text, w)
		}
	}
	if p.Program != nil {
		h := &fakeHost{}
		_ = p.Program.Check(text, h)
		_ = p.Program.Run(text, h, []Result{{ID: "c1", Output: `{"id": [1], "a": "b"}`}})
	}
}

// FuzzParse: parsing never panics, an error is an *Error located inside
// the reply, and a program runs (and checks) without panicking, twice the
// same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"<helpers>find_user(name=\"a\")</helpers>",
		"<helpers>\nu = find_user(\"a\", \"1\")\norders(user_id=u[\"id\"][0] + 1, **u)\n</helpers>",
		"<helpers>x = f\"{1}{'a'}\" + \"\\x41\"; orders(user_id=x)</helpers>",
		"<helpers>orders(user_id=[1, (2,), {\"a\": None}])",
		"text <helpers># comment\nfiles.read(path=r'\\d')</helpers> more",
		"<helpers>\nn = 1\norders(user_id=[x.y(*a, k=v) for x in n[1:] if not x], z=f\"{n!r:>{w}}\" + n)\n</helpers>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text, testTools)
		checkSourceText(t, text, p, err)
		if err != nil {
			e, ok := err.(*Error)
			if !ok || e.Offset < 0 || e.Offset > len(text) || e.Line < 1 || e.Col < 1 {
				t.Fatalf("Parse(%q): %#v", text, err)
			}
			return
		}
		if p.Program == nil {
			return
		}
		h := &fakeHost{}
		_ = p.Program.Check(text, h)
		results := []Result{{ID: "c1", Output: `{"id": [1], "a": "b"}`}}
		if a, b := p.Program.Run(text, h, results), p.Program.Run(text, h, results); !reflect.DeepEqual(a, b) {
			t.Fatalf("two runs of %q differ: %+v, %+v", text, a, b)
		}
	})
}
