package provider

import (
	"reflect"
	"strings"
)

// Settings are the keys of an agent file's [models.ROLE] table that the
// providers read. shell/agent's Model embeds it (the keys sit in the same
// table) and adds the retry table and the prices, which are the shell's.
// A provider that needs a key of its own adds a field here, tagged with
// its key, and lists the key in its Entry.Keys.
type Settings struct {
	Provider    string   `toml:"provider"`
	Model       string   `toml:"model"`
	BaseURL     string   `toml:"base_url"`
	APIKeyEnv   string   `toml:"api_key_env"`
	Timeout     string   `toml:"timeout"`
	MaxRetries  int      `toml:"max_retries"`
	Temperature *float32 `toml:"temperature"`
	MaxTokens   int      `toml:"max_tokens"`
	// Script is the JSONL file provider script answers from.
	Script string `toml:"script"`
	// Stream = false sends requests unstreamed (default: streamed).
	Stream *bool `toml:"stream"`
	// Accepts lists what the model reads besides text: "image", "audio"
	// (the providers whose Supports.Attachments list them).
	Accepts []string `toml:"accepts"`
	// ReasoningEffort and ReasoningSummary (openai-responses) set the
	// request's reasoning.effort and reasoning.summary.
	ReasoningEffort  string `toml:"reasoning_effort"`
	ReasoningSummary string `toml:"reasoning_summary"`
	// ThinkingBudget (anthropic) turns extended thinking on with this
	// many tokens.
	ThinkingBudget int `toml:"thinking_budget"`
}

// Given lists the keys s sets (its non-zero fields), in field order.
func (s Settings) Given() []string {
	v := reflect.ValueOf(s)
	var keys []string
	for i := range v.NumField() {
		if !v.Field(i).IsZero() {
			keys = append(keys, tomlKey(v.Type().Field(i)))
		}
	}
	return keys
}

// tomlKey is the agent-file key of a Settings field: its toml tag's name.
func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}
