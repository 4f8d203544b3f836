package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/anthropic"
	"github.com/stepwise-agent/stepwise/shell/models/openai"
	"github.com/stepwise-agent/stepwise/shell/models/script"
)

// keyError is an error about one key of a table, which it is reported at
// (the key's path in the table: "script", "retry.backoff").
type keyError struct {
	key string
	err error
}

func (e *keyError) Error() string { return e.err.Error() }
func (e *keyError) Unwrap() error { return e.err }

// keyErrorf is a keyError whose message starts with the key.
func keyErrorf(key, format string, args ...any) error {
	return &keyError{key, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))}
}

// model checks one [models.ROLE] table and sets its label in models.
func (s *Spec) model(role string, m Model, models *core.Models, checkFiles bool) error {
	switch role {
	case "primary", "helper":
	default:
		return errors.New("the roles are primary and helper")
	}
	switch m.Provider {
	case "openai", "openai-responses", "anthropic":
		if m.Model == "" {
			return fmt.Errorf("model is required for provider %s", m.Provider)
		}
		if m.Script != "" {
			return keyErrorf("script", "applies to provider script only")
		}
	case "script":
		if m.Script == "" {
			return errors.New("script is required for provider script")
		}
		if m.Retry != nil {
			return keyErrorf("retry", "applies to the HTTP providers (openai, openai-responses, anthropic), not script")
		}
		if m.Stream != nil {
			return keyErrorf("stream", "applies to the HTTP providers (openai, openai-responses, anthropic), not script")
		}
		if m.Accepts != nil {
			return keyErrorf("accepts", "applies to provider openai only")
		}
		if checkFiles {
			path := s.Resolve(m.Script)
			if _, err := script.Load(path); errors.Is(err, fs.ErrNotExist) {
				return keyErrorf("script", "%s does not exist", path)
			} else if err != nil {
				return keyErrorf("script", "%v", err)
			}
		}
	default:
		return fmt.Errorf("provider %q is not one of openai, openai-responses, anthropic, script", m.Provider)
	}
	if err := providerKeys(m); err != nil {
		return err
	}
	if _, err := duration(m.Timeout); err != nil {
		return keyErrorf("timeout", "%v", err)
	}
	for _, k := range m.Accepts {
		if k != openai.AcceptImage && k != openai.AcceptAudio {
			return keyErrorf("accepts", "%q is not one of %q, %q", k, openai.AcceptImage, openai.AcceptAudio)
		}
	}
	if m.MaxRetries < -1 {
		return keyErrorf("max_retries", "%d is below -1 (-1 means no retries)", m.MaxRetries)
	}
	if m.Retry != nil {
		if m.MaxRetries != 0 && m.Retry.Attempts != nil {
			return keyErrorf("max_retries", "give retry.attempts or max_retries, not both")
		}
		p, err := m.Retry.policy()
		if err != nil {
			return err
		}
		s.modelRetry[role] = p
	}
	label := m.Model
	if label == "" {
		label = m.Provider + ":" + filepath.Base(m.Script)
	}
	if role == "primary" {
		models.Primary = label
	} else {
		models.Helper = label
	}
	return nil
}

// providerKeys checks the keys that only some providers take.
func providerKeys(m Model) error {
	if m.ReasoningEffort != "" || m.ReasoningSummary != "" {
		if m.Provider != "openai-responses" {
			key := "reasoning_effort"
			if m.ReasoningEffort == "" {
				key = "reasoning_summary"
			}
			return keyErrorf(key, "applies to provider openai-responses only")
		}
		if !slices.Contains([]string{"", "minimal", "low", "medium", "high"}, m.ReasoningEffort) {
			return keyErrorf("reasoning_effort", "%q is not one of minimal, low, medium, high", m.ReasoningEffort)
		}
		if !slices.Contains([]string{"", "auto", "concise", "detailed"}, m.ReasoningSummary) {
			return keyErrorf("reasoning_summary", "%q is not one of auto, concise, detailed", m.ReasoningSummary)
		}
	}
	if m.ThinkingBudget != 0 {
		if m.Provider != "anthropic" {
			return keyErrorf("thinking_budget", "applies to provider anthropic only")
		}
		maxTokens := m.MaxTokens
		if maxTokens == 0 {
			maxTokens = anthropic.DefaultMaxTokens
		}
		if m.ThinkingBudget < 1024 || m.ThinkingBudget >= maxTokens {
			return keyErrorf("thinking_budget", "%d is not at least 1024 and below max_tokens (%d)", m.ThinkingBudget, maxTokens)
		}
	}
	if m.MaxTokens < 0 {
		return keyErrorf("max_tokens", "%d is negative", m.MaxTokens)
	}
	return nil
}

// tools builds the tools of one [[tools]] table and records their timeouts
// and retry policies.
func (s *Spec) tools(t ToolTable) ([]core.Tool, error) {
	var params json.RawMessage
	if t.Builtin == "" {
		var err error
		if params, err = parameters(t.Parameters); err != nil {
			return nil, &keyError{"parameters", fmt.Errorf("%q: parameters: %v", t.Name, err)}
		}
	}
	if t.Secrets != nil {
		if t.Command == nil && t.Builtin != "run_code" {
			return nil, keyErrorf("secrets", "only a command tool or run_code takes secrets (into its environment)")
		}
		for _, n := range t.Secrets {
			if !envName.MatchString(n) {
				return nil, keyErrorf("secrets", "%q is not a variable name (letters, digits and '_')", n)
			}
		}
	}
	impls, err := s.implsFor(t, params)
	if err != nil {
		if t.Parameters != nil && strings.Contains(err.Error(), ": parameters: ") {
			return nil, &keyError{"parameters", err} // the command's check of its schema
		}
		return nil, err
	}
	specs, err := s.specsFor(t, params, impls)
	if err != nil {
		return nil, err
	}
	if err := s.settings(t, specs, impls == nil); err != nil {
		return nil, err
	}
	if d, _ := duration(t.Timeout); d > 0 {
		for _, ct := range specs {
			s.ToolTimeouts[ct.Name] = d + toolGrace
		}
	}
	if t.Retry != nil {
		p, err := t.Retry.policy()
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(specs, func(ct core.Tool) bool { return ct.Idempotent }) {
			return nil, keyErrorf("retry", "only idempotent tools are retried: set idempotent = true if running the tool twice is safe")
		}
		for _, ct := range specs {
			s.ToolRetry[ct.Name] = p.WithDefaults(shell.DefaultToolRetry)
		}
	}
	s.impls = append(s.impls, impls...)
	return specs, nil
}
