package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// argError is one problem with a call's arguments, in words a model can
// correct from. A type mismatch keeps what was wanted and found, so that
// anyOf can merge them into one "expected a string or an integer".
type argError struct {
	path      argPath
	text      string
	wantTypes []string // set for a type mismatch only
}

// argErrors is every problem of one call, sorted by argument path.
type argErrors []argError

// Error joins the problems' texts with "; ".
func (e argErrors) Error() string {
	texts := make([]string, len(e))
	for i, x := range e {
		texts[i] = x.text
	}
	return strings.Join(texts, "; ")
}

// argPath locates a value inside the arguments: object keys and array indexes.
type argPath []pathSeg

type pathSeg struct {
	key     string
	index   int
	isIndex bool
}

func (p argPath) key(k string) argPath { return append(slices.Clip(p), pathSeg{key: k}) }

func (p argPath) index(i int) argPath {
	return append(slices.Clip(p), pathSeg{index: i, isIndex: true})
}

// String renders the path as a model would write it: filters.tags[2].
func (p argPath) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.isIndex:
			fmt.Fprintf(&b, "[%d]", s.index)
		case !plainKey(s.key):
			fmt.Fprintf(&b, "[%s]", strconv.Quote(s.key))
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// comparePaths orders paths segment by segment: keys as strings, indexes as
// numbers, a key before an index, a parent before its children.
func comparePaths(a, b argPath) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.isIndex != y.isIndex:
			if x.isIndex {
				return 1
			}
			return -1
		case x.isIndex && x.index != y.index:
			return x.index - y.index
		case !x.isIndex && x.key != y.key:
			return strings.Compare(x.key, y.key)
		}
	}
	return len(a) - len(b)
}

// typeError reports a value of a type the schema does not allow; lead names
// the value (argument "limit": ).
func typeError(lead string, p argPath, want []string, found any) argError {
	return argError{path: p, wantTypes: want, text: fmt.Sprintf("%sexpected %s, found %s", lead, typeWords(want), describeFound(found))}
}

// noFormError reports a value that fits none of anyOf's or oneOf's branches.
// When every branch failed only on the type of the value itself, the message
// is one type mismatch; otherwise it lists each branch's problems.
func noFormError(v *argChecker, p argPath, val any, fails map[int]argErrors) argError {
	var want []string
	typesOnly := true
	for i := range len(fails) {
		f := fails[i]
		if len(f) != 1 || f[0].wantTypes == nil || comparePaths(f[0].path, p) != 0 {
			typesOnly = false
			break
		}
		for _, t := range f[0].wantTypes {
			if !slices.Contains(want, t) {
				want = append(want, t)
			}
		}
	}
	if typesOnly {
		return typeError(v.lead(p), p, want, val)
	}
	forms := make([]string, len(fails))
	for i := range len(fails) {
		forms[i] = fmt.Sprintf("form %d: %v", i+1, fails[i])
	}
	return argError{path: p, text: fmt.Sprintf("%s matches none of the allowed forms (%s)", v.name(p), strings.Join(forms, "; "))}
}

func unknownText(s *Schema, p argPath, k string) string {
	where := "the arguments are"
	if len(p) > 0 {
		where = fmt.Sprintf("the arguments of %q are", p.String())
	}
	if len(s.propOrder) == 0 {
		if len(p) == 0 {
			return fmt.Sprintf("unknown argument %q (this tool takes no arguments)", p.key(k).String())
		}
		return fmt.Sprintf("unknown argument %q (%q takes no arguments)", p.key(k).String(), p.String())
	}
	if near := nearMatch(k, s.propOrder); near != "" {
		return fmt.Sprintf("unknown argument %q (did you mean %q? %s: %s)", p.key(k).String(), p.key(near).String(), where, strings.Join(s.propOrder, ", "))
	}
	return fmt.Sprintf("unknown argument %q (%s: %s)", p.key(k).String(), where, strings.Join(s.propOrder, ", "))
}

// missingText reports a missing required argument r of the object at p.
// When the call also gave unknown arguments there, which were dropped, it
// names them too: the one that looks like r first ("BASE" for "base" is
// the common slip), else all of them.
func missingText(p argPath, r string, ignored []string) string {
	text := fmt.Sprintf("missing required argument %q", p.key(r).String())
	if near := nearMatch(r, ignored); near != "" {
		return text + fmt.Sprintf(" (the unknown argument %q was ignored: did you mean %q?)", p.key(near).String(), p.key(r).String())
	}
	switch len(ignored) {
	case 0:
		return text
	case 1:
		return text + fmt.Sprintf(" (the unknown argument %q was ignored)", p.key(ignored[0]).String())
	}
	names := make([]string, len(ignored))
	for i, k := range ignored {
		names[i] = strconv.Quote(p.key(k).String())
	}
	return text + " (the unknown arguments " + joinWords(names, "and") + " were ignored)"
}

var typeNouns = map[string]string{
	"object": "an object", "array": "an array", "string": "a string", "integer": "an integer",
	"number": "a number", "boolean": "a boolean", "null": "null",
}

// typeWords renders allowed types: "a string", "a string or null".
func typeWords(types []string) string {
	words := make([]string, len(types))
	for i, t := range types {
		words[i] = typeNouns[t]
	}
	return joinWords(words, "or")
}

// describeFound names a value with its type: the string "5", the number 1.5.
func describeFound(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case string:
		return "the string " + shortJSON(x)
	case json.Number:
		return "the number " + clip(x.String())
	case []any:
		return "an array of " + plural(len(x), "item")
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// shortJSON renders a value as compact JSON, clipped to a readable length.
func shortJSON(v any) string {
	b, err := Canonical(v)
	if err != nil {
		return clip(fmt.Sprintf("%v", v))
	}
	return clip(string(b))
}

// valueList renders enum values: "red", "green".
func valueList(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = shortJSON(v)
	}
	return strings.Join(parts, ", ")
}

// joinWords joins with commas and a final conjunction: a, b or c.
func joinWords(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// clipWidth is how many bytes of a value a message quotes.
const clipWidth = 120

// clip cuts s to clipWidth bytes (on a rune boundary) for a message, saying
// how much it left out; the same words as the core's descriptions.
func clip(s string) string {
	if len(s) <= clipWidth {
		return s
	}
	cut := clipWidth
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…(+%d bytes)", len(s)-cut)
}
