package tools

import "encoding/json"

// prop is one property of an argument schema.
type prop struct {
	name   string
	schema map[string]any
}

// objectSchema returns a strict object schema: the given properties, the
// required names, and additionalProperties false. Keys are written sorted
// (encoding/json sorts map keys), so the same options give the same bytes.
func objectSchema(props []prop, required ...string) json.RawMessage {
	ps := make(map[string]any, len(props))
	for _, p := range props {
		ps[p.name] = p.schema
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           ps,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("tools: schema does not encode: " + err.Error()) // only literal values above
	}
	return b
}

// str is a string property.
func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}
