package helpers

import (
	"reflect"
	"testing"
)

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
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text, testTools)
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
