package anthropic

import (
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// Entry is the provider's row in the provider table (shell/models).
func Entry() provider.Entry {
	return provider.Entry{
		Name: Name, GenAIName: "anthropic", HTTP: true, DefaultBaseURL: DefaultBaseURL,
		Required: []string{"model"},
		Keys:     []string{"thinking_budget"},
		Supports: provider.Supports{Streaming: true},
		Check:    check,
		New: func(b provider.Build) (shell.ModelProvider, error) {
			return New(Options{
				BaseURL: b.BaseURL, Model: b.Model, APIKeyEnv: b.APIKeyEnv, Timeout: b.Timeout, Retry: b.Retry,
				Temperature: b.Temperature, MaxTokens: b.MaxTokens, NoStream: b.NoStream, RenderOnly: b.Render, ThinkingBudget: b.ThinkingBudget,
			})
		},
	}
}

// check checks thinking_budget against max_tokens (DefaultMaxTokens when
// left out).
func check(s provider.Settings, _ bool) error {
	if s.ThinkingBudget == 0 {
		return nil
	}
	maxTokens := s.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	if !thinkingFits(s.ThinkingBudget, maxTokens) {
		return provider.KeyErrorf("thinking_budget", "%d is not at least 1024 and below max_tokens (%d)", s.ThinkingBudget, maxTokens)
	}
	return nil
}

// thinkingFits: a thinking budget is at least 1024 tokens and below the
// reply's max tokens.
func thinkingFits(budget, maxTokens int) bool { return budget >= 1024 && budget < maxTokens }
