package models

import (
	"github.com/stepwise-agent/stepwise/shell/models/anthropic"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
	"github.com/stepwise-agent/stepwise/shell/models/responses"
	"github.com/stepwise-agent/stepwise/shell/models/script"
)

// Providers is the provider table: every provider an agent file can name,
// in the order messages list them. Adding a provider is adding its Entry
// here (and describing it in this package's doc).
func Providers() provider.Table {
	return provider.Table{
		openai.Entry(),
		responses.Entry(),
		anthropic.Entry(),
		script.Entry(),
	}
}
