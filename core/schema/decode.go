package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeArgs reads call arguments: a JSON object (numbers kept exact, as
// json.Number), in which no object, at any depth, has a key twice. Empty
// arguments mean no arguments. The error says what is wrong in words a model
// can correct from.
func DecodeArgs(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	if obj, ok := decodeObjectFast(text); ok {
		return obj, nil
	}
	return decodeArgsLibrary(text)
}

// decodeArgsLibrary is DecodeArgs through encoding/json: every input, and
// the error texts the model reads.
func decodeArgsLibrary(text string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("arguments hold more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, found %s", jsonKind(v))
	}
	if p, dup := repeatedKey(text); dup {
		// encoding/json would keep the last one silently; which one the
		// model meant is not ours to guess.
		return nil, fmt.Errorf("argument %q is given more than once; give each argument once", p.String())
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// DecodeValue reads text as one JSON value, as call arguments are read:
// numbers kept as written (json.Number), nothing but white space after the
// value. Unlike DecodeArgs it takes any value, and a repeated key keeps its
// last value, as encoding/json does.
func DecodeValue(text string) (any, error) {
	p := jsonParser{s: text}
	p.space()
	if v, ok := p.value(0); ok {
		p.space()
		if p.i == len(p.s) {
			return v, nil
		}
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if strings.TrimSpace(text[dec.InputOffset():]) != "" {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// decodeObjectFast decodes text as one JSON object into what a json.Decoder
// with UseNumber gives (map[string]any, []any, string, json.Number, bool,
// nil), without reflection. It takes only the common case: one object,
// nothing but whitespace after it, strings of valid UTF-8 whose escapes are
// not \u surrogates, no key given twice in one object. For anything else it
// reports false and the caller uses encoding/json, which decodes it the same
// way or says what is wrong with it (TestDecodeObjectFastMatchesLibrary
// holds the two together), and repeatedKey, which names a repeated key.
func decodeObjectFast(text string) (map[string]any, bool) {
	p := jsonParser{s: text}
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, false
	}
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	if p.i != len(p.s) {
		return nil, false
	}
	return v.(map[string]any), true
}

type jsonParser struct {
	s string
	i int
}

// maxFastDepth bounds the nesting the fast path follows; deeper documents go
// to encoding/json, which has its own limit.
const maxFastDepth = 64

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) || depth > maxFastDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.s) && isNumberByte(p.s[p.i]) {
			p.i++
		}
		lit := p.s[start:p.i]
		return json.Number(lit), isJSONNumber(lit)
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(p.s)-p.i >= len(lit.text) && p.s[p.i:p.i+len(lit.text)] == lit.text {
			p.i += len(lit.text)
			return lit.v, true
		}
	}
	return nil, false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (p *jsonParser) object(depth int) (any, bool) {
	p.i++ // {
	obj := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return obj, true
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		if _, dup := obj[k.(string)]; dup {
			return nil, false // a repeated key: DecodeArgs refuses it by name
		}
		obj[k.(string)] = v
		if more, ok := p.next('}'); !ok || !more {
			return obj, ok
		}
	}
}

func (p *jsonParser) array(depth int) (any, bool) {
	p.i++ // [
	arr := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return arr, true
	}
	for {
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		if more, ok := p.next(']'); !ok || !more {
			return arr, ok
		}
	}
}

// next reads what follows a member of an object or array: a comma (more
// follow) or the closing byte (none do); anything else is not ok.
func (p *jsonParser) next(closing byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.s) {
		return false, false
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

// str reads a string. Without escapes it is a slice of the text; escapes
// other than \u surrogates are decoded.
func (p *jsonParser) str() (any, bool) {
	p.i++ // "
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			return s, utf8.ValidString(s)
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return nil, false
		default:
			p.i++
		}
	}
	return nil, false
}

// escaped reads the rest of a string that has an escape at p.i, its
// unescaped part starting at start.
func (p *jsonParser) escaped(start int) (any, bool) {
	b := []byte(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), utf8.Valid(b)
		case c < 0x20:
			return nil, false
		case c != '\\':
			b = append(b, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return nil, false
		}
		switch e := p.s[p.i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(p.s[p.i+2:])
			if !ok || r >= 0xd800 && r <= 0xdfff {
				return nil, false // surrogates: encoding/json's pairing rules
			}
			b = utf8.AppendRune(b, r)
			p.i += 4
		default:
			return nil, false
		}
		p.i += 2
	}
	return nil, false
}

func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// repeatedKey finds the first key that an object in the JSON text has
// twice, in document order, and returns its path (filters.tags for the
// second "tags" in the object at "filters"). It reports false for text
// without one, and for text that is not valid JSON.
func repeatedKey(text string) (argPath, bool) {
	type frame struct {
		obj     bool
		path    argPath
		keys    map[string]bool
		key     string // the key whose value comes next (objects)
		wantKey bool
		index   int // the index of the next item (arrays)
	}
	// child is the path of the next value in f, and moves f past it.
	child := func(f *frame) argPath {
		if f.obj {
			f.wantKey = true
			return f.path.key(f.key)
		}
		f.index++
		return f.path.index(f.index - 1)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				var p argPath
				if top != nil {
					p = child(top)
				}
				stack = append(stack, &frame{obj: d == '{', path: p, keys: map[string]bool{}, wantKey: d == '{'})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return nil, false
				}
			}
			continue
		}
		switch {
		case top == nil:
			return nil, false
		case top.obj && top.wantKey:
			k, _ := tok.(string)
			if top.keys[k] {
				return top.path.key(k), true
			}
			top.keys[k], top.key, top.wantKey = true, k, false
		default:
			child(top)
		}
	}
}
