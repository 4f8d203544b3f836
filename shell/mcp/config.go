package mcp

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults for ServerConfig fields left at zero.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMaxRestarts = 2
	// DefaultCancelGrace is how long a server has, after a call that timed
	// out was cancelled, to show it is still responsive (a ping answered).
	DefaultCancelGrace = 5 * time.Second
	// DefaultMaxAttachmentBytes bounds one image or sound kept for the
	// model; a larger one is only described, with its size.
	DefaultMaxAttachmentBytes = 1 << 20
)

// Separator joins a server's name and a tool's name into the name the model
// sees: NAME__TOOL.
const Separator = "__"

// maxServerName bounds a server name, leaving room for tool names within the
// core's 64-character limit.
const maxServerName = 32

// ServerConfig is one MCP server: plain data, mapped from an [[mcp]] table.
type ServerConfig struct {
	// Name prefixes the server's tools (NAME__TOOL): 1-32 letters, digits,
	// '-' and '_', starting and ending with a letter or digit, without "__".
	Name string
	// Command (with Args) runs a stdio server. It is looked up in the
	// parent's PATH.
	Command string
	Args    []string
	// Env is added to the stdio server's environment, which is otherwise
	// minimal: only HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG and TMPDIR
	// are inherited from the parent (PATH defaults to /usr/local/bin:/usr/bin:/bin).
	Env map[string]string
	// URL is a streamable HTTP server's endpoint (http or https).
	URL string
	// Headers are sent with every HTTP request (for example Authorization).
	Headers map[string]string
	// Allow lists the server's tools to expose (names without the prefix);
	// Deny lists tools to hide. Setting both is an error; neither exposes all.
	Allow, Deny []string
	// Timeout bounds one tool call (0: DefaultTimeout).
	Timeout time.Duration
	// Idempotent marks every tool of the server as safe to re-run after a
	// crash left its outcome unknown.
	Idempotent bool
	// MaxRestarts bounds how often the server is started again after a
	// failure, over the manager's lifetime (0: DefaultMaxRestarts; negative:
	// never).
	MaxRestarts int
	// CancelGrace bounds how long the server has to answer a ping after a
	// call that timed out was cancelled; one that does not is stopped
	// (0: DefaultCancelGrace).
	CancelGrace time.Duration
	// Roots are the file:// URIs the client offers the server as its roots.
	// Without any, the client does not declare the roots capability.
	Roots []string
	// Optional makes the server's failure not the run's: when it cannot
	// start, or dies with no restarts left, its tools are withdrawn and the
	// model is told, instead of the manager failing (see Manager).
	Optional bool
	// MaxAttachmentBytes bounds one image or sound a call returns that is
	// kept for the model (0: DefaultMaxAttachmentBytes).
	MaxAttachmentBytes int
}

// Validate reports every problem with the config.
func (c ServerConfig) Validate() error {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !validServerName(c.Name) {
		bad("name %q must be 1-%d letters, digits, '-' or '_', start and end with a letter or digit, and not contain %q", c.Name, maxServerName, Separator)
	}
	switch {
	case c.Command == "" && c.URL == "":
		bad("set command (stdio) or url (streamable HTTP)")
	case c.Command != "" && c.URL != "":
		bad("set command or url, not both")
	case c.Command != "":
		if len(c.Headers) > 0 {
			bad("headers apply to url servers only")
		}
		for _, k := range slices.Sorted(maps.Keys(c.Env)) {
			if !validEnvName(k) {
				bad("env name %q must be letters, digits and '_', not starting with a digit", k)
			}
		}
	default:
		if len(c.Args) > 0 || len(c.Env) > 0 {
			bad("args and env apply to command servers only")
		}
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url %q must be an http or https URL", c.URL)
		}
		for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
			if !validHeaderName(k) {
				bad("header name %q is not a valid HTTP header name", k)
			}
			if strings.ContainsAny(c.Headers[k], "\r\n") {
				bad("header %q: value contains a line break", k)
			}
		}
	}
	if len(c.Allow) > 0 && len(c.Deny) > 0 {
		bad("set allow or deny, not both")
	}
	for _, n := range append(append([]string{}, c.Allow...), c.Deny...) {
		if n == "" {
			bad("allow and deny entries must not be empty")
			break
		}
	}
	if c.Timeout < 0 {
		bad("timeout is negative")
	}
	if c.CancelGrace < 0 {
		bad("cancel grace is negative")
	}
	if c.MaxAttachmentBytes < 0 {
		bad("max attachment bytes is negative")
	}
	for _, r := range c.Roots {
		if u, err := url.Parse(r); err != nil || u.Scheme != "file" || u.Path == "" {
			bad("root %q must be a file:// URI with a path", r)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	name := c.Name
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Errorf("mcp server %s: %s", name, strings.Join(errs, "; "))
}

// validateAll validates each config and that names are unique.
func validateAll(servers []ServerConfig) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range servers {
		if err := s.Validate(); err != nil {
			errs = append(errs, err)
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("mcp server %s: duplicate name", s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}

func (c ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

func (c ServerConfig) cancelGrace() time.Duration {
	if c.CancelGrace > 0 {
		return c.CancelGrace
	}
	return DefaultCancelGrace
}

func (c ServerConfig) maxAttachment() int {
	if c.MaxAttachmentBytes > 0 {
		return c.MaxAttachmentBytes
	}
	return DefaultMaxAttachmentBytes
}

// CallBound is how long one call of the server's tools can take at most: its
// timeout, then the grace its cancellation has.
func (c ServerConfig) CallBound() time.Duration { return c.timeout() + c.cancelGrace() }

func (c ServerConfig) maxRestarts() int {
	switch {
	case c.MaxRestarts == 0:
		return DefaultMaxRestarts
	case c.MaxRestarts < 0:
		return 0
	}
	return c.MaxRestarts
}

// exposes reports whether the allow/deny lists let the tool through.
func (c ServerConfig) exposes(tool string) bool {
	if len(c.Allow) > 0 {
		return slices.Contains(c.Allow, tool)
	}
	return !slices.Contains(c.Deny, tool)
}

// ToolName is the name the model sees for a server's tool: NAME__TOOL.
func ToolName(server, tool string) string { return server + Separator + tool }

// SplitToolName undoes ToolName; ok is false when name has no server prefix.
func SplitToolName(name string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(name, Separator)
	return server, tool, ok && server != "" && tool != ""
}

func validServerName(s string) bool {
	if len(s) == 0 || len(s) > maxServerName || strings.Contains(s, Separator) {
		return false
	}
	for i, r := range s {
		alnum := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		edge := i == 0 || i == len(s)-1
		if !alnum && (edge || (r != '-' && r != '_')) {
			return false
		}
	}
	return true
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// validHeaderName accepts an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}
