package helpers

import (
	"bytes"
	"encoding/json"
)

// ParamOrder lists the names under a parameter schema's "properties" in the
// order the schema text writes them (a token walk, not a map, keeps it): the
// names positional arguments take, in order. It is nil for a schema that is
// not valid JSON or has no "properties" object.
func ParamOrder(schema json.RawMessage) []string {
	if !json.Valid(schema) {
		return nil
	}
	for _, m := range objectMembers(schema) {
		if m.key == "properties" && bytes.HasPrefix(m.raw, []byte("{")) {
			var names []string
			for _, prop := range objectMembers(m.raw) {
				names = append(names, prop.key)
			}
			return names
		}
	}
	return nil
}

type member struct {
	key string
	raw json.RawMessage
}

// objectMembers lists the members of a valid JSON object in the order
// written, a key given twice included; nil when raw is not an object.
func objectMembers(raw json.RawMessage) []member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, member{key: key, raw: v})
	}
	return out
}
