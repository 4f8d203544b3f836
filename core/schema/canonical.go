package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// Canonical encodes v with sorted keys, no HTML escaping and no spaces:
// the bytes encoding/json's Encoder gives with SetEscapeHTML(false), without
// its trailing newline. The values call arguments decode to (objects,
// arrays, strings, json.Number, booleans, null) are written here, without
// reflection; anything else goes through encoding/json.
func Canonical(v any) (json.RawMessage, error) {
	if b, ok := appendCanonical(nil, v); ok {
		return b, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// appendCanonical appends v's canonical JSON to dst; false when v holds a
// value it does not write (the caller then uses encoding/json).
func appendCanonical(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		return appendCanonicalString(dst, v), true
	case json.Number:
		if !isJSONNumber(string(v)) {
			return dst, false // encoding/json reports the error
		}
		return append(dst, v...), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendCanonical(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		if v == nil {
			return append(dst, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, strings.Compare)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendCanonicalString(dst, k), ':')
			var ok bool
			if dst, ok = appendCanonical(dst, v[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

const hexDigits = "0123456789abcdef"

// appendCanonicalString writes s as encoding/json does without HTML escaping:
// quotes, backslashes and control characters escaped, invalid UTF-8 as
// U+FFFD, and U+2028 and U+2029 escaped (JavaScript reads them as line
// ends).
func appendCanonicalString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}
