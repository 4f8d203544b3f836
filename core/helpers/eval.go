package helpers

// Values of a running helpers program and how expressions compute them
// (the rules are in the package doc, "The helpers format").

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// maxHelperValue bounds the size of any value a program computes (its
// text, numbers and strings, plus two bytes per item of a list or dict).
const maxHelperValue = 1 << 20

// hval is a value and its cost, an upper bound of its size (see
// maxHelperValue) kept so that a value built from others is measured
// without walking them. v is a JSON value as decoded with UseNumber (nil,
// bool, json.Number, string, []any, map[string]any) or a *callResult.
type hval struct {
	v    any
	cost int
}

// callResult is what a call statement binds its target to: the call's
// result, or a placeholder while the call has not answered (pending).
type callResult struct {
	id, tool string
	text     string // the output the model reads
	err      string // the error text of a failed call
	pending  bool
}

// evalError is why a value cannot be computed; off locates the expression
// at fault in the reply.
type evalError struct {
	off int
	msg string
	// limit marks a value over maxHelperValue: a bound, not a value
	// outside the subset (Options.SourceText keeps it a refusal).
	limit bool
}

func (e *evalError) Error() string { return e.msg }

// errAwaitsResult: the value depends on a call that has not answered yet.
var errAwaitsResult = errors.New("the value depends on a result not yet in")

func evalErr(e hexpr, format string, args ...any) error {
	return &evalError{off: e.offset(), msg: fmt.Sprintf(format, args...)}
}

// limitErr is evalErr for a value over maxHelperValue.
func limitErr(e hexpr, format string, args ...any) error {
	return &evalError{off: e.offset(), msg: fmt.Sprintf(format, args...), limit: true}
}

// evalHelper computes e with the names in env. It fails with an
// *evalError, or with errAwaitsResult when e needs a pending call's result.
func evalHelper(e hexpr, env map[string]hval) (hval, error) {
	switch e := e.(type) {
	case *hLit:
		if e.lit.isStr {
			return hval{v: e.lit.str, cost: len(e.lit.str)}, nil
		}
		v, err := schema.DecodeValue(e.lit.json)
		if err != nil {
			return hval{}, evalErr(e, "%v", err)
		}
		return hval{v: v, cost: len(e.lit.json)}, nil
	case *hName:
		v, ok := env[e.name]
		if !ok {
			return hval{}, evalErr(e, "%s is not defined", e.name)
		}
		return v, nil
	case *hList:
		items := make([]any, len(e.items))
		cost := 2
		for i, it := range e.items {
			v, err := plainValue(it, env)
			if err != nil {
				return hval{}, err
			}
			items[i], cost = v.v, cost+v.cost+2
		}
		return sized(e, items, cost)
	case *hDict:
		obj := make(map[string]any, len(e.members))
		cost := 2
		for _, m := range e.members {
			v, err := plainValue(m.val, env)
			if err != nil {
				return hval{}, err
			}
			obj[m.key], cost = v.v, cost+len(m.key)+v.cost+2
		}
		return sized(e, obj, cost)
	case *hIndex:
		return evalIndex(e, env)
	case *hSum:
		acc, err := plainValue(e.terms[0], env)
		if err != nil {
			return hval{}, err
		}
		for i, t := range e.terms[1:] {
			v, err := plainValue(t, env)
			if err != nil {
				return hval{}, err
			}
			if acc, err = add(e.ops[i], acc, v); err != nil {
				return hval{}, err
			}
		}
		return acc, nil
	case *hFString:
		var b strings.Builder
		for _, part := range e.parts {
			v, err := plainValue(part, env)
			if err != nil {
				return hval{}, err
			}
			writeHelperText(&b, v.v)
			if b.Len() > maxHelperValue {
				return hval{}, limitErr(e, "the f-string is longer than %d bytes", maxHelperValue)
			}
		}
		return hval{v: b.String(), cost: b.Len()}, nil
	}
	return hval{}, &evalError{msg: fmt.Sprintf("unknown expression %T", e)}
}

func sized(e hexpr, v any, cost int) (hval, error) {
	if cost > maxHelperValue {
		return hval{}, limitErr(e, "the value is larger than %d bytes", maxHelperValue)
	}
	return hval{v: v, cost: cost}, nil
}

// plainValue computes e as a JSON value: a call's result is its output
// text (a str).
func plainValue(e hexpr, env map[string]hval) (hval, error) {
	v, err := evalHelper(e, env)
	if err != nil {
		return hval{}, err
	}
	r, ok := v.v.(*callResult)
	if !ok {
		return v, nil
	}
	if err := r.usable(e); err != nil {
		return hval{}, err
	}
	return hval{v: r.text, cost: len(r.text)}, nil
}

// usable reports why a result cannot be used (e reads it): it is not in
// yet, or the call failed.
func (r *callResult) usable(e hexpr) error {
	switch {
	case r.pending:
		return errAwaitsResult
	case r.err != "":
		return evalErr(e, "%s holds no value: the call %s (%s) failed: %s", describeHelperExpr(e), r.tool, r.id, clipText(r.err, 200))
	}
	return nil
}

// jsonOfResult reads a result as JSON, for a subscript or **.
func (r *callResult) jsonOf(e hexpr) (hval, error) {
	if err := r.usable(e); err != nil {
		return hval{}, err
	}
	v, err := schema.DecodeValue(r.text)
	if err != nil {
		msg := fmt.Sprintf("%s is not JSON, so it has no keys or items: the result of %s (%s) is %s", describeHelperExpr(e), r.tool, r.id, excerptText(r.text))
		if strings.Contains(r.text, "\n[truncated: showing ") {
			msg += " (it was cut to the tool's max_result_bytes)"
		}
		return hval{}, evalErr(e, "%s", msg)
	}
	return hval{v: v, cost: len(r.text)}, nil
}

func evalIndex(e *hIndex, env map[string]hval) (hval, error) {
	x, err := evalHelper(e.x, env)
	if err != nil {
		return hval{}, err
	}
	if r, ok := x.v.(*callResult); ok {
		if x, err = r.jsonOf(e.x); err != nil {
			return hval{}, err
		}
	}
	key, err := plainValue(e.key, env)
	if err != nil {
		return hval{}, err
	}
	what := describeHelperExpr(e.x)
	switch c := x.v.(type) {
	case map[string]any:
		k, ok := key.v.(string)
		if !ok {
			return hval{}, evalErr(e.key, "%s is a dict: its keys are strings, not %s", what, helperTypeName(key.v))
		}
		v, ok := c[k]
		if !ok {
			return hval{}, evalErr(e.key, "the key %q is not in %s (its keys: %s)", k, what, keysText(c))
		}
		return hval{v: v, cost: costOf(v, maxHelperValue)}, nil
	case []any:
		n, ok := key.v.(json.Number)
		i, err := strconv.ParseInt(string(n), 10, 64)
		if !ok || err != nil {
			return hval{}, evalErr(e.key, "%s is a list: its indexes are integers, not %s", what, helperTypeName(key.v))
		}
		if i < 0 {
			i += int64(len(c))
		}
		if i < 0 || i >= int64(len(c)) {
			return hval{}, evalErr(e.key, "the index %s is out of range: %s has %d item(s)", n, what, len(c))
		}
		return hval{v: c[i], cost: costOf(c[i], maxHelperValue)}, nil
	case string:
		return hval{}, evalErr(e, "%s is a str: subscripts read dicts and lists (a tool's result is read as JSON when it is JSON)", what)
	}
	return hval{}, evalErr(e, "%s is %s: subscripts read dicts and lists", what, helperTypeName(x.v))
}

// add is a + b: two strings joined, or two numbers added exactly.
func add(off int, a, b hval) (hval, error) {
	at := &hLit{off: off}
	switch x := a.v.(type) {
	case string:
		if y, ok := b.v.(string); ok {
			if len(x)+len(y) > maxHelperValue {
				return hval{}, limitErr(at, "the joined string is longer than %d bytes", maxHelperValue)
			}
			return hval{v: x + y, cost: len(x) + len(y)}, nil
		}
	case json.Number:
		if y, ok := b.v.(json.Number); ok {
			sum, err := addNumbers(x, y)
			if err != nil {
				return hval{}, evalErr(at, "%v", err)
			}
			return hval{v: sum, cost: len(sum)}, nil
		}
	}
	return hval{}, evalErr(at, "+ joins two strings or adds two numbers; here it has %s and %s (write an f-string such as f\"{a} {b}\" to join text and numbers)", helperTypeName(a.v), helperTypeName(b.v))
}

// addNumbers adds two JSON numbers exactly: integers as integers of any
// size; otherwise in decimal, with as many decimals as the operands need
// (at least one: 1 + 2.0 is 3.0).
func addNumbers(a, b json.Number) (json.Number, error) {
	if isIntegerText(string(a)) && isIntegerText(string(b)) {
		x, _ := new(big.Int).SetString(string(a), 10)
		y, _ := new(big.Int).SetString(string(b), 10)
		return json.Number(x.Add(x, y).String()), nil
	}
	x, sx, err := decimalOf(a)
	if err != nil {
		return "", err
	}
	y, sy, err := decimalOf(b)
	if err != nil {
		return "", err
	}
	s := new(big.Rat).Add(x, y).FloatString(max(sx, sy, 1))
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return json.Number(s), nil
}

// maxAddExponent bounds the exponent of a number +, so that 1e999999999 + 1
// does not write a billion digits.
const maxAddExponent = 1000

// decimalOf reads a JSON number exactly, with the decimals it needs.
func decimalOf(n json.Number) (*big.Rat, int, error) {
	s := string(n)
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > maxAddExponent || e < -maxAddExponent {
			return nil, 0, fmt.Errorf("the number %s is too large or too small to add (exponents up to %d)", s, maxAddExponent)
		}
		mant, exp = s[:i], e
	}
	decimals := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		decimals = len(mant) - i - 1
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, 0, fmt.Errorf("%s is not a number", s)
	}
	return r, max(0, decimals-exp), nil
}

func isIntegerText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !pyDigit(s[i]) {
			return false
		}
	}
	return true
}

// writeHelperText writes v as an f-string shows it: a str as it is, a
// number as written, True/False/None as Python writes them, a list or dict
// as compact JSON with sorted keys.
func writeHelperText(b *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
	case json.Number:
		b.WriteString(string(v))
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case nil:
		b.WriteString("None")
	default:
		raw, err := schema.Canonical(v)
		if err != nil {
			b.WriteString("None")
			return
		}
		b.Write(raw)
	}
}

// helperTypeName names a value's type as a Python programmer would.
func helperTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "a bool"
	case json.Number:
		return "a number"
	case string:
		return "a str"
	case []any:
		return "a list"
	case map[string]any:
		return "a dict"
	case *callResult:
		return "a tool's result"
	}
	return fmt.Sprintf("%T", v)
}

// describeHelperExpr names an expression for messages: user, user[...],
// or "the value".
func describeHelperExpr(e hexpr) string {
	switch e := e.(type) {
	case *hName:
		return e.name
	case *hIndex:
		if base := describeHelperExpr(e.x); base != "the value" {
			if k, ok := e.key.(*hLit); ok {
				return base + "[" + k.lit.json + "]"
			}
			return base + "[...]"
		}
	}
	return "the value"
}

// keysText lists a dict's keys for a message, sorted, at most ten.
func keysText(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return "none"
	}
	more := ""
	if len(keys) > 10 {
		keys, more = keys[:10], fmt.Sprintf(", and %d more", len(keys)-10)
	}
	for i, k := range keys {
		keys[i] = strconv.Quote(k)
	}
	return strings.Join(keys, ", ") + more
}

// costOf measures v (see hval), walking at most until it passes limit
// (then it is limit+1): the walk is bounded even when a value shares parts
// many times over.
func costOf(v any, limit int) int {
	n := 0
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			n += len(v)
		case json.Number:
			n += len(v)
		case []any:
			n += 2
			for _, it := range v {
				n += 2
				if n > limit || !walk(it) {
					return false
				}
			}
		case map[string]any:
			n += 2
			for k, it := range v {
				n += 2 + len(k)
				if n > limit || !walk(it) {
					return false
				}
			}
		default:
			n += 4
		}
		return n <= limit
	}
	walk(v)
	return min(n, limit+1)
}

// litOf is a computed value as a literal.
func litOf(v any) pyLit {
	if s, ok := v.(string); ok {
		return pyLit{json: jsonQuoted(s), str: s, isStr: true}
	}
	raw, err := schema.Canonical(v)
	if err != nil {
		return pyLit{json: "null"}
	}
	return pyLit{json: string(raw)}
}

// clipText cuts s to n bytes (on a rune boundary) for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// excerptText quotes the start of a result for a message.
func excerptText(s string) string {
	if strings.TrimSpace(s) == "" {
		return "empty"
	}
	return "the text " + strconv.Quote(clipText(s, 60))
}
