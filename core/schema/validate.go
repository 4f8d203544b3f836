package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate checks a call's arguments (decoded with UseNumber, as DecodeArgs
// does) against the parameter schema s and returns them normalized: defaults
// injected for missing optional properties, unknown properties dropped (or
// refused when rejectUnknown is set or the schema says
// additionalProperties: false), and integers written without a fraction or
// exponent. Every problem is reported in one error, sorted by argument path,
// in words a model can correct from. The input is never modified.
func (s *Schema) Validate(args map[string]any, rejectUnknown bool) (map[string]any, error) {
	return s.Check(args, Checks{RejectUnknown: rejectUnknown})
}

// Checks are the options of a validation beyond the schema itself.
type Checks struct {
	// RejectUnknown refuses unknown properties instead of dropping them.
	RejectUnknown bool
	// StrictNumbers refuses a number written with a fraction or an
	// exponent (5.0, 5e0) where the schema says integer, which JSON
	// Schema's own rule accepts.
	StrictNumbers bool
}

// Check is Validate with the options c.
func (s *Schema) Check(args map[string]any, c Checks) (map[string]any, error) {
	v := &argChecker{rejectUnknown: c.RejectUnknown, strictNumbers: c.StrictNumbers}
	out := v.value(s, args, nil, true)
	if len(v.errs) > 0 {
		return nil, v.result()
	}
	obj, _ := out.(map[string]any)
	return obj, nil
}

// argChecker walks a value and its schema together, collecting problems.
type argChecker struct {
	rejectUnknown bool
	strictNumbers bool
	isDefault     bool // checking a schema's default: the empty path is "the default"
	errs          []argError
}

func (v *argChecker) add(e argError) { v.errs = append(v.errs, e) }

// addf adds a problem of the value at p, led by its name: argument "limit": ...
func (v *argChecker) addf(p argPath, format string, args ...any) {
	v.add(argError{path: p, text: v.lead(p) + fmt.Sprintf(format, args...)})
}

// name names the value at p for a message.
func (v *argChecker) name(p argPath) string {
	switch {
	case len(p) > 0:
		return fmt.Sprintf("argument %q", p.String())
	case v.isDefault:
		return "the default"
	}
	return "the arguments"
}

// lead starts a message about the value at p; a default's own problems need no lead.
func (v *argChecker) lead(p argPath) string {
	if len(p) == 0 && v.isDefault {
		return ""
	}
	return v.name(p) + ": "
}

// result returns the collected problems, sorted by path, as one error.
func (v *argChecker) result() argErrors {
	errs := slices.Clone(v.errs)
	sort.SliceStable(errs, func(i, j int) bool { return comparePaths(errs[i].path, errs[j].path) < 0 })
	return errs
}

// sub returns a checker with the same policy and no problems yet.
func (v *argChecker) sub() *argChecker {
	return &argChecker{rejectUnknown: v.rejectUnknown, strictNumbers: v.strictNumbers, isDefault: v.isDefault}
}

// value checks val against s at path p. With rewrite it returns the
// normalized value (always fresh maps and slices); without, it only checks
// and returns val (inside anyOf and oneOf, see the ADR).
func (v *argChecker) value(s *Schema, val any, p argPath, rewrite bool) any {
	if s.never {
		v.add(argError{path: p, text: v.name(p) + " is not allowed here"})
		return val
	}
	kind, ok := jsonTypeOf(val)
	if !ok { // with UseNumber input, only a number whose exponent is out of bounds
		v.addf(p, "expected a number with an exponent between -%d and %d, found %s", maxExponent, maxExponent, describeFound(val))
		return val
	}
	if s.types != nil && !typeAllowed(s.types, kind) {
		v.add(typeError(v.lead(p), p, s.types, val))
		return val
	}
	if n, isNum := val.(json.Number); isNum && v.strictNumbers && kind == "integer" && !slices.Contains(s.types, "number") &&
		strings.ContainsAny(n.String(), ".eE") {
		v.addf(p, "expected an integer written without a fraction or an exponent, found %s", clip(n.String()))
		return val
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, val) }) {
		v.addf(p, "expected one of %s, found %s", valueList(s.enum), shortJSON(val))
		return val
	}
	if s.hasConst && !jsonEqual(s.constVal, val) {
		v.addf(p, "expected %s, found %s", shortJSON(s.constVal), shortJSON(val))
		return val
	}
	out := val
	switch x := val.(type) {
	case string:
		v.checkString(s, x, p)
	case json.Number:
		out = v.checkNumber(s, x, p, rewrite)
	case []any:
		out = v.checkArray(s, x, p, rewrite)
	case map[string]any:
		out = v.checkObject(s, x, p, rewrite)
	}
	v.checkAlternatives(s, out, p)
	return out
}

func (v *argChecker) checkString(s *Schema, x string, p argPath) {
	n := utf8.RuneCountInString(x)
	if s.minLength >= 0 && n < s.minLength {
		v.addf(p, "expected a string of at least %s, found %s (%s)", plural(s.minLength, "character"), describeFound(x), plural(n, "character"))
	}
	if s.maxLength >= 0 && n > s.maxLength {
		v.addf(p, "expected a string of at most %s, found %s (%s)", plural(s.maxLength, "character"), describeFound(x), plural(n, "character"))
	}
	if s.pattern != nil && !s.pattern.MatchString(x) {
		v.addf(p, "expected a string matching the pattern %s, found %s", s.pattern.String(), describeFound(x))
	}
}

func (v *argChecker) checkNumber(s *Schema, x json.Number, p argPath, rewrite bool) any {
	r, _ := numberRat(x) // jsonTypeOf accepted x, so it parses
	noun := "a number"
	if slices.Equal(s.types, []string{"integer"}) {
		noun = "an integer"
	}
	for _, b := range []struct {
		bound *numBound
		bad   func(c int) bool
		want  string
	}{
		{s.minimum, func(c int) bool { return c < 0 }, "of at least"},
		{s.maximum, func(c int) bool { return c > 0 }, "of at most"},
		{s.exclMin, func(c int) bool { return c <= 0 }, "greater than"},
		{s.exclMax, func(c int) bool { return c >= 0 }, "less than"},
	} {
		if b.bound != nil && b.bad(r.Cmp(b.bound.r)) {
			v.addf(p, "expected %s %s %s, found %s", noun, b.want, b.bound.text, clip(x.String()))
		}
	}
	if s.multipleOf != nil && !new(big.Rat).Quo(r, s.multipleOf.r).IsInt() {
		v.addf(p, "expected a multiple of %s, found %s", s.multipleOf.text, clip(x.String()))
	}
	if rewrite && r.IsInt() && slices.Contains(s.types, "integer") {
		return json.Number(r.Num().String()) // 2.0 and 2e0 become 2
	}
	return x
}

func (v *argChecker) checkArray(s *Schema, x []any, p argPath, rewrite bool) any {
	if s.minItems >= 0 && len(x) < s.minItems {
		v.addf(p, "expected at least %s, found %d", plural(s.minItems, "item"), len(x))
	}
	if s.maxItems >= 0 && len(x) > s.maxItems {
		v.addf(p, "expected at most %s, found %d", plural(s.maxItems, "item"), len(x))
	}
	out := make([]any, len(x))
	for i, item := range x {
		is := s.items
		if i < len(s.prefixItems) {
			is = s.prefixItems[i]
		}
		out[i] = item
		if is != nil {
			out[i] = v.value(is, item, p.index(i), rewrite)
		}
	}
	if s.uniqueItems {
		seen := make(map[string]int, len(out))
		for j, item := range out {
			k := jsonKey(item)
			if i, dup := seen[k]; dup {
				v.addf(p, "expected unique items, found item %d equal to item %d", j, i)
				break
			}
			seen[k] = j
		}
	}
	if !rewrite {
		return x
	}
	return out
}

func (v *argChecker) checkObject(s *Schema, x map[string]any, p argPath, rewrite bool) any {
	out := make(map[string]any, len(x))
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ignored []string // unknown keys the policy drops (or, in a branch, passes over)
	for _, k := range keys {
		ps, known := s.props[k]
		switch {
		case known:
			out[k] = v.value(ps, x[k], p.key(k), rewrite)
		case s.extra != nil:
			out[k] = v.value(s.extra, x[k], p.key(k), rewrite)
		case s.closed || (s.declared && v.rejectUnknown):
			v.add(argError{path: p.key(k), text: unknownText(s, p, k)})
		case s.declared && rewrite:
			ignored = append(ignored, k) // unknown and the policy drops it
		default:
			if s.declared {
				ignored = append(ignored, k)
			}
			out[k] = x[k] // a free-form object (no "properties") keeps its contents
		}
	}
	for _, r := range s.required {
		if _, ok := x[r]; !ok {
			v.add(argError{path: p.key(r), text: missingText(p, r, ignored)})
		}
	}
	if !rewrite {
		return x
	}
	for _, k := range s.propOrder {
		ps := s.props[k]
		if _, given := x[k]; !given && ps.hasDef && !slices.Contains(s.required, k) {
			out[k] = v.value(ps, ps.def, p.key(k), true)
		}
	}
	return out
}

// checkAlternatives applies anyOf and oneOf. Branches only check: they never
// inject defaults or drop properties, so normalizing stays idempotent.
func (v *argChecker) checkAlternatives(s *Schema, val any, p argPath) {
	if len(s.anyOf) > 0 {
		fails := v.tryBranches(s.anyOf, val, p)
		if len(fails) == len(s.anyOf) {
			v.add(noFormError(v, p, val, fails))
		}
	}
	if len(s.oneOf) > 0 {
		fails := v.tryBranches(s.oneOf, val, p)
		switch ok := len(s.oneOf) - len(fails); {
		case ok == 0:
			v.add(noFormError(v, p, val, fails))
		case ok > 1:
			var matched []string
			for i := range s.oneOf {
				if _, failed := fails[i]; !failed {
					matched = append(matched, strconv.Itoa(i+1))
				}
			}
			v.add(argError{path: p, text: fmt.Sprintf("%s matches more than one of the allowed forms (forms %s); it must match exactly one", v.name(p), joinWords(matched, "and"))})
		}
	}
}

// tryBranches checks val against each branch and returns the failures by branch index.
func (v *argChecker) tryBranches(branches []*Schema, val any, p argPath) map[int]argErrors {
	fails := map[int]argErrors{}
	for i, b := range branches {
		w := v.sub()
		w.value(b, val, p, false)
		if len(w.errs) > 0 {
			fails[i] = w.result()
		}
	}
	return fails
}

// jsonTypeOf names the JSON type of a decoded value; a number with no
// fractional part is an "integer" (JSON Schema's rule: 2.0 is an integer).
func jsonTypeOf(val any) (string, bool) {
	switch x := val.(type) {
	case nil:
		return "null", true
	case bool:
		return "boolean", true
	case string:
		return "string", true
	case json.Number:
		r, ok := numberRat(x)
		if !ok {
			return "", false
		}
		if r.IsInt() {
			return "integer", true
		}
		return "number", true
	case []any:
		return "array", true
	case map[string]any:
		return "object", true
	}
	return "", false
}

func typeAllowed(types []string, kind string) bool {
	return slices.Contains(types, kind) || (kind == "integer" && slices.Contains(types, "number"))
}

// maxExponent bounds the exponent of a number argument, so that a reply like
// 1e999999999 cannot make exact arithmetic allocate without limit.
const maxExponent = 400

// numberRat reads a JSON number exactly; false if it is not a JSON number or
// its exponent is beyond maxExponent.
func numberRat(n json.Number) (*big.Rat, bool) {
	s := n.String()
	if !isJSONNumber(s) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			exp := s[i+1:]
			if len(exp) > 6 {
				return nil, false
			}
			e, err := strconv.Atoi(exp)
			if err != nil || e > maxExponent || e < -maxExponent {
				return nil, false
			}
		}
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// isJSONNumber reports whether s has the JSON number grammar (big.Rat alone
// would also take "0x10", "1/2" or "+1").
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// jsonEqual is JSON equality: numbers by value (1 equals 1.0), objects by
// their members, arrays item by item.
func jsonEqual(a, b any) bool { return jsonKey(a) == jsonKey(b) }

// jsonKey renders a value so that exactly the JSON-equal values share a key.
func jsonKey(v any) string {
	var b strings.Builder
	writeJSONKey(&b, v)
	return b.String()
}

func writeJSONKey(b *strings.Builder, v any) {
	switch x := v.(type) {
	case json.Number:
		if r, ok := numberRat(x); ok {
			b.WriteString(r.RatString())
		} else {
			b.WriteString("?" + x.String())
		}
	case string:
		b.WriteString(strconv.Quote(x))
	case []any:
		b.WriteByte('[')
		for _, e := range x {
			writeJSONKey(b, e)
			b.WriteByte(',')
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for _, k := range keys {
			b.WriteString(strconv.Quote(k) + ":")
			writeJSONKey(b, x[k])
			b.WriteByte(',')
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, x) // null, true, false
	}
}
