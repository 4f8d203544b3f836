package agent

import (
	"strings"

	"github.com/stepwise-agent/stepwise/core"
)

// Context is the [context] table (core.ContextPolicy): what a request to
// the primary model may hold, and how the conversation is compacted to fit.
type Context struct {
	// Enabled = false turns compaction off, even for a model whose window
	// is known.
	Enabled *bool `toml:"enabled"`
	// MaxTokens bounds a request; without it, MaxFraction of the primary
	// model's context window (0.8 by default).
	MaxTokens   int      `toml:"max_tokens"`
	MaxFraction *float64 `toml:"max_fraction"`
	KeepTurns   int      `toml:"keep_turns"`
	// Strategies are elide_results and summarize, in the order to try.
	Strategies   []string `toml:"strategies"`
	Summarizer   string   `toml:"summarizer"`
	SummaryWords int      `toml:"summary_words"`
}

// defaultFraction is the share of the window a request may fill, leaving
// room for the reply.
const defaultFraction = 0.8

// knownWindows are the context windows, in tokens, of well-known models,
// by the start of their name: the longest prefix that matches wins.
var knownWindows = map[string]int{
	"gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4-turbo": 128_000, "gpt-4.1": 1_047_576, "gpt-4": 8_192,
	"gpt-3.5-turbo": 16_385, "gpt-5": 400_000, "o1": 200_000, "o3": 200_000, "o4-mini": 200_000,
	"claude-": 200_000, "claude-sonnet-4": 200_000, "claude-opus-4": 200_000,
	"gemini-1.5": 1_048_576, "gemini-2": 1_048_576, "llama3": 8_192, "llama-3.1": 131_072, "llama3.1": 131_072,
	"qwen2.5": 32_768, "mistral-large": 131_072,
}

// KnownWindow is the context window of a well-known model (0: unknown).
func KnownWindow(model string) int {
	model = strings.ToLower(model)
	best, window := 0, 0
	for prefix, w := range knownWindows {
		if strings.HasPrefix(model, prefix) && len(prefix) > best {
			best, window = len(prefix), w
		}
	}
	return window
}

// bytesPerToken is the estimator's ratio for a provider family: Anthropic's
// tokenizer makes more tokens of the same text than OpenAI's.
func bytesPerToken(provider string) int {
	if provider == "anthropic" {
		return 3
	}
	return 4
}

// contextPolicy builds cfg.Context from [context] and the primary model's
// window: on whenever a bound is known (max_tokens, or a window from
// context_window or the model's name), unless enabled = false.
func contextPolicy(f File, cfg *core.Config, at func(path, format string, args ...any) error) error {
	c := f.Context
	primary := f.Models["primary"]
	if primary.ContextWindow < 0 {
		return at("models.primary.context_window", "models.primary.context_window is negative")
	}
	window := primary.ContextWindow
	if window == 0 {
		window = KnownWindow(primary.Model)
	}
	if c == nil {
		c = &Context{}
	}
	if c.Enabled != nil && !*c.Enabled {
		return nil
	}
	fraction := defaultFraction
	if c.MaxFraction != nil {
		if *c.MaxFraction <= 0 || *c.MaxFraction > 1 {
			return at("context.max_fraction", "context.max_fraction %v is not in (0, 1]", *c.MaxFraction)
		}
		fraction = *c.MaxFraction
	}
	maxTokens := c.MaxTokens
	switch {
	case maxTokens < 0:
		return at("context.max_tokens", "context.max_tokens is negative")
	case maxTokens == 0 && window > 0:
		maxTokens = int(float64(window) * fraction)
	case maxTokens == 0 && f.Context != nil:
		return at("context", "[context] needs max_tokens, or the primary model's window: [models.primary] context_window (the window of %q is not known)", primary.Model)
	case maxTokens == 0:
		return nil // no bound is known: requests are sent whole
	case window > 0 && maxTokens > window:
		return at("context.max_tokens", "context.max_tokens %d is over the primary model's context window of %d", maxTokens, window)
	}
	p := &core.ContextPolicy{MaxTokens: maxTokens, KeepTurns: c.KeepTurns, SummaryWords: c.SummaryWords,
		BytesPerToken: bytesPerToken(primary.Provider), Summarizer: core.ModelRole(c.Summarizer)}
	for _, s := range c.Strategies {
		p.Strategies = append(p.Strategies, core.ContextStrategy(s))
	}
	for _, e := range p.Errors() {
		return at("context", "%s", e)
	}
	if p.Summarizer == core.Helper && cfg.Models.Helper == "" {
		return at("context.summarizer", "context.summarizer is helper, and the agent has no [models.helper]")
	}
	cfg.Context = p
	return nil
}

// Output is the [output] table (core.OutputPolicy): the final answer is a
// JSON value that fits schema (JSON text or a table, like a tool's
// parameters).
type Output struct {
	Schema         any  `toml:"schema"`
	MaxCorrections *int `toml:"max_corrections"`
}

// outputPolicy builds cfg.Output from [output].
func outputPolicy(f File, cfg *core.Config, at func(path, format string, args ...any) error) error {
	o := f.Output
	if o == nil {
		return nil
	}
	if o.Schema == nil {
		return at("output", "[output] needs a schema (a JSON Schema, as JSON text or a table)")
	}
	raw, err := parameters(o.Schema)
	if err != nil {
		return at("output.schema", "output.schema: %v", err)
	}
	p := &core.OutputPolicy{Schema: raw}
	if o.MaxCorrections != nil {
		switch n := *o.MaxCorrections; {
		case n < 0:
			return at("output.max_corrections", "output.max_corrections is negative")
		case n == 0:
			p.NoCorrections = true
		default:
			p.MaxCorrections = n
		}
	}
	for _, e := range p.Errors() {
		return at("output.schema", "%s", e)
	}
	cfg.Output = p
	return nil
}
