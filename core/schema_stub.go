package core

import (
	"encoding/json"
	"errors"
)

// Placeholders until the JSON Schema validator lands (issue 3).

func checkSchema(raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return errors.New("not a JSON object")
	}
	return nil
}

func validateArgs(_ Tool, args map[string]any, _ bool) (map[string]any, error) { return args, nil }
