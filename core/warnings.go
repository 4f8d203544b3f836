package core

import "fmt"

// Warnings lists what is wrong with a config without making it unusable,
// for `stepwise validate` and other tools to show the agent's author. Today
// that is a tool schema's "default" that does not fit its own schema (such
// as "false" for a boolean or null for a string): Validate accepts the
// tool, the default is never injected, and the tool docs leave it out.
//
// The order is deterministic: tools in the order the model sees them, each
// tool's warnings in the order its schema was checked. A tool whose schema
// Validate refuses has no warnings here; Validate names its problems.
func (c Config) Warnings() []string {
	var out []string
	for _, t := range c.tools() {
		s, err := c.argSchema(t)
		if err != nil {
			continue
		}
		for _, w := range s.Warnings() {
			out = append(out, fmt.Sprintf("tool %q: parameters: %s", t.Name, w))
		}
	}
	return out
}
