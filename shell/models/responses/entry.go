package responses

import (
	"slices"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// Entry is the provider's row in the provider table (shell/models).
func Entry() provider.Entry {
	return provider.Entry{
		Name: Name, GenAIName: "stepwise." + Name, HTTP: true, DefaultBaseURL: DefaultBaseURL,
		Required: []string{"model"},
		Keys:     []string{"reasoning_effort", "reasoning_summary"},
		Supports: provider.Supports{Streaming: true},
		Check:    check,
		New: func(b provider.Build) (shell.ModelProvider, error) {
			return New(Options{
				BaseURL: b.BaseURL, Model: b.Model, APIKeyEnv: b.APIKeyEnv, Timeout: b.Timeout, Retry: b.Retry,
				Temperature: b.Temperature, MaxTokens: b.MaxTokens, NoStream: b.NoStream, RenderOnly: b.Render,
				ReasoningEffort: b.ReasoningEffort, ReasoningSummary: b.ReasoningSummary,
			})
		},
	}
}

// check checks the reasoning keys' values.
func check(s provider.Settings, _ bool) error {
	if !slices.Contains(efforts, s.ReasoningEffort) {
		return provider.KeyErrorf("reasoning_effort", "%q is not one of minimal, low, medium, high", s.ReasoningEffort)
	}
	if !slices.Contains(summaries, s.ReasoningSummary) {
		return provider.KeyErrorf("reasoning_summary", "%q is not one of auto, concise, detailed", s.ReasoningSummary)
	}
	return nil
}

// The values of reasoning.effort and reasoning.summary ("": not sent).
var (
	efforts   = []string{"", "minimal", "low", "medium", "high"}
	summaries = []string{"", "auto", "concise", "detailed"}
)
