package openai

import (
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// Name is the provider's name in agent files.
const Name = "openai"

// Entry is the provider's row in the provider table (shell/models).
func Entry() provider.Entry {
	return provider.Entry{
		Name: Name, GenAIName: "openai", HTTP: true, DefaultBaseURL: DefaultBaseURL,
		Required: []string{"model"},
		Supports: provider.Supports{Streaming: true, Attachments: []string{AcceptImage, AcceptAudio}},
		New: func(b provider.Build) (shell.ModelProvider, error) {
			return New(Options{
				BaseURL: b.BaseURL, Model: b.Model, APIKeyEnv: b.APIKeyEnv, Timeout: b.Timeout, Retry: b.Retry,
				Temperature: b.Temperature, MaxTokens: b.MaxTokens, Accepts: b.Accepts, NoStream: b.NoStream, RenderOnly: b.Render,
			})
		},
	}
}
