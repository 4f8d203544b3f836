package helpers

import (
	"strings"
	"testing"
)

// TestLiterals: each Python literal as the JSON of a literal call's argument.
func TestLiterals(t *testing.T) {
	for _, tc := range []struct{ lit, want string }{
		{`"a\tb\n"`, `"a\tb\n"`},
		{`'it\'s'`, `"it's"`},
		{`"\x41\u00e9\U0001F600\101"`, `"Aé😀A"`},
		{`r"\n\d"`, `"\\n\\d"`},
		{`"""two
lines"""`, `"two\nlines"`},
		{`'a' "b"`, `"ab"`},
		{`u"x"`, `"x"`},
		{`"\q"`, `"\\q"`}, // an unknown escape stays, as in Python
		{`0x1F`, `31`},
		{`0o17`, `15`},
		{`0b101`, `5`},
		{`1_000_000`, `1000000`},
		{`-7`, `-7`},
		{`+7`, `7`},
		{`1.`, `1.0`},
		{`.5`, `0.5`},
		{`2.5e-3`, `2.5e-3`},
		{`1E5`, `1E5`},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`[]`, `[]`},
		{`()`, `[]`},
		{`(1,)`, `[1]`},
		{`{}`, `{}`},
		{`{"a": [1, 2,], "b": {"c": None},}`, `{"a":[1,2],"b":{"c":null}}`},
	} {
		p, err := Parse("<helpers>orders(user_id="+tc.lit+")</helpers>", testTools)
		if err != nil || len(p.Calls) != 1 {
			t.Errorf("%s: %+v, %v", tc.lit, p, err)
			continue
		}
		if want := `{"user_id":` + tc.want + `}`; p.Calls[0].Arguments != want {
			t.Errorf("%s = %s, want %s", tc.lit, p.Calls[0].Arguments, want)
		}
	}
}

func TestLiteralErrors(t *testing.T) {
	for _, tc := range []struct{ lit, msg string }{
		{`"abc`, "not closed"},
		{`b"x"`, "bytes"},
		{`0x`, "not a valid number"},
		{`1__0`, "not a valid number"},
		{`07`, "leading zeros are not allowed in an integer: write 7"},
		{`{1: 2}`, "keys"},
		{`[1 2]`, "expected ',' or ']'"},
		{`f"{1!r}"`, "conversions such as {x!r} are not supported"},
		{`f"{1:.2f}"`, "format specs such as {x:.2f} are not supported"},
		{`lambda: 1`, "lambda"},
		{`1 if True else 2`, "found if: values are literals"},
		{`[1][0:1]`, "slices"},
		{`x.y`, "attribute access and methods are not supported"},
		{strings.Repeat("[", 70) + strings.Repeat("]", 70), "nest"},
	} {
		_, err := Parse("<helpers>orders(user_id="+tc.lit+")</helpers>", testTools)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q in it", tc.lit, err, tc.msg)
		}
	}
}
