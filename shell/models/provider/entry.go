package provider

import (
	"fmt"
	"slices"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// Entry is one provider's row in the provider table.
type Entry struct {
	// Name is the provider's name in agent files (provider = NAME) and in
	// the opaque data it keeps with a run.
	Name string
	// GenAIName is what telemetry reports as gen_ai.provider.name: the
	// OpenTelemetry conventions' well-known value where there is one,
	// else "stepwise." and the name.
	GenAIName string
	// HTTP says the provider calls an HTTP API: base_url, api_key_env and
	// timeout mean something to it, and it takes a retry table (refused
	// on the other providers).
	HTTP bool
	// DefaultBaseURL is the API root used when base_url is left out
	// (telemetry reports its host as server.address); "" for none.
	DefaultBaseURL string
	// Required lists the keys the provider cannot do without ("model").
	Required []string
	// Keys lists the keys only some providers take that this one takes,
	// besides those Supports implies (retry for HTTP, stream for
	// Streaming, accepts for Attachments).
	Keys []string
	// Supports says what the provider can do.
	Supports Supports
	// Check, when set, checks the values of the provider's own keys; the
	// script path is resolved, and readFiles false skips reading files (a
	// run's stored agent). Its errors should be *KeyError.
	Check func(s Settings, readFiles bool) error
	// New builds the provider for one model role.
	New func(b Build) (shell.ModelProvider, error)
}

// Supports says what a provider can do.
type Supports struct {
	// Streaming: replies arrive as deltas (the request's OnDelta), unless
	// stream = false.
	Streaming bool
	// Attachments lists the kinds of attachments the provider can send to
	// a model, the values of accepts ("image", "audio").
	Attachments []string
}

// Build is what Entry.New gets: the settings, with what the agent file
// says of them parsed.
type Build struct {
	// Settings are the role's keys, Script resolved to an absolute path.
	Settings
	// Timeout is the timeout key (0: the provider's default).
	Timeout time.Duration
	// Retry is the role's retry table with max_retries folded in; its zero
	// fields take shell.DefaultModelRetry's.
	Retry shell.RetryPolicy
	// NoStream is stream = false.
	NoStream bool
	// ScriptOffset is the number of model calls made before a script
	// starts answering (a fork continues a run on a new script).
	ScriptOffset int
	// Render builds the provider to render requests only
	// (shell.RequestRenderer), for a tool that shows what a recorded run
	// sent: it reads no API key (its marker stands in for it) nor script
	// file, and its Complete fails.
	Render bool
}

// Takes reports whether the provider takes key, of the keys only some
// providers take.
func (e Entry) Takes(key string) bool {
	switch key {
	case "retry":
		return e.HTTP
	case "stream":
		return e.Supports.Streaming
	case "accepts":
		return len(e.Supports.Attachments) > 0
	}
	return slices.Contains(e.Keys, key)
}

// KeyError is an error about one key of a [models.ROLE] table.
type KeyError struct {
	Key string
	Err error
}

// Error starts with the key: "thinking_budget: ...".
func (e *KeyError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the error without its key.
func (e *KeyError) Unwrap() error { return e.Err }

// KeyErrorf makes a *KeyError about key.
func KeyErrorf(key, format string, args ...any) error {
	return &KeyError{Key: key, Err: fmt.Errorf(format, args...)}
}
