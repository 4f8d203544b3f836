package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
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

// model checks one [models.ROLE] table, through its provider's entry in
// the provider table, and sets its label in labels.
func (s *Spec) model(role string, m Model, labels *core.Models, checkFiles bool) error {
	switch role {
	case "primary", "helper":
	default:
		return errors.New("the roles are primary and helper")
	}
	table := models.Providers()
	e, ok := table.Lookup(m.Provider)
	if !ok {
		return fmt.Errorf("provider %q is not one of %s", m.Provider, strings.Join(table.Names(), ", "))
	}
	given := m.Given()
	for _, k := range e.Required {
		if !slices.Contains(given, k) {
			return fmt.Errorf("%s is required for provider %s", k, e.Name)
		}
	}
	if m.Retry != nil {
		given = append([]string{"retry"}, given...)
	}
	for _, k := range given {
		if why := table.Refusal(e, k); why != "" {
			return keyErrorf(k, "%s", why)
		}
	}
	for _, k := range m.Accepts {
		if !slices.Contains(e.Supports.Attachments, k) {
			return keyErrorf("accepts", "%q is not one of %s", k, quoted(e.Supports.Attachments))
		}
	}
	if e.Check != nil {
		set := m.Settings
		set.Script = s.Resolve(set.Script)
		if err := e.Check(set, checkFiles); err != nil {
			var ke *provider.KeyError
			if errors.As(err, &ke) {
				return &keyError{ke.Key, err}
			}
			return err
		}
	}
	if m.MaxTokens < 0 {
		return keyErrorf("max_tokens", "%d is negative", m.MaxTokens)
	}
	if _, err := duration(m.Timeout); err != nil {
		return keyErrorf("timeout", "%v", err)
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
		labels.Primary = label
	} else {
		labels.Helper = label
	}
	return nil
}

// quoted lists words quoted: "image", "audio".
func quoted(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, ", ")
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
