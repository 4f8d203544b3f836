package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/internal/tomlerr"
	"github.com/stepwise-agent/stepwise/shell/mcp"
)

// ErrInvalid wraps every error about an agent file's content.
var ErrInvalid = errors.New("invalid agent")

// Spec is a parsed, validated agent file.
type Spec struct {
	File   File
	Config core.Config
	// Path is the file it came from ("" when parsed from a stored source);
	// Dir is where its relative paths are resolved.
	Path, Dir string
	// Text is the file's text, kept so a run can rebuild its agent later.
	Text []byte
	// Timeouts per tool name, and the run's shell limits.
	ToolTimeouts  map[string]time.Duration
	ToolTimeout   time.Duration
	RunTimeout    time.Duration
	MaxToolOutput int
	// ToolRetry is the retry policy of each tool whose table has a retry
	// key (shell.DefaultToolRetry filling what it leaves out).
	ToolRetry map[string]shell.RetryPolicy
	// ToolSettings are the view, output schema and cache of each tool
	// whose table has one of those keys.
	ToolSettings map[string]shell.ToolSettings
	// InDoubt is [run] in_doubt (default shell.InDoubtUnknown).
	InDoubt shell.InDoubtPolicy
	// SecretNames are the environment variables the agent names as secret
	// (see secretNames); Build reads their values.
	SecretNames []string

	impls []shell.Tool // built-in and command tools, in config order
	// agentTools are the tools the [[agents]] tables declare.
	agentTools []core.Tool
	// modelRetry is the retry table of each model role that has one.
	modelRetry map[string]shell.RetryPolicy
	// base is Config before MCP tools are added (see withMCP).
	base core.Config
	// mcpRecord is the MCP tool list a run saw, once listed or restored;
	// mcpImpls are its tools.
	mcpRecord *mcp.Record
	mcpImpls  []shell.Tool
}

// Load reads and validates the agent file at path; a file over
// MaxFileBytes is refused before it is read (ErrTooLarge).
func Load(path string) (*Spec, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	s, err := Parse(data, path, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	s.Path = abs
	return s, nil
}

// Parse validates agent file text; name is used in messages, dir resolves
// relative paths. A model's script must exist and parse. Text over
// MaxFileBytes is refused (ErrTooLarge).
func Parse(data []byte, name, dir string) (*Spec, error) {
	if len(data) > MaxFileBytes {
		return nil, tooLarge(name, int64(len(data)))
	}
	return parse(data, name, dir, true)
}

// parse is Parse; checkFiles false skips reading the models' scripts, for
// a run's stored agent (replay needs no script; a build that does reports
// a missing one).
func parse(data []byte, name, dir string, checkFiles bool) (*Spec, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, tomlerr.Wrap(ErrInvalid, name, err)
	}
	if err := applyPreset(&f, data, name); err != nil {
		return nil, err
	}
	s := &Spec{
		File: f, Dir: dir, Text: data, ToolTimeouts: map[string]time.Duration{},
		ToolRetry: map[string]shell.RetryPolicy{}, ToolSettings: map[string]shell.ToolSettings{}, modelRetry: map[string]shell.RetryPolicy{},
	}
	if err := s.convert(name, data, checkFiles); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Spec) convert(name string, data []byte, checkFiles bool) error {
	f := s.File
	lines := indexKeys(data)
	// at makes an error at the line of the key path names (see keyLines).
	at := func(path, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if line := lines.of(path); line > 0 {
			return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, name, line, msg)
		}
		return fmt.Errorf("%w: %s: %s", ErrInvalid, name, msg)
	}
	cfg := core.Config{
		Name: f.Name, SystemPrompt: f.SystemPrompt, Format: core.Format(f.Format), StuckPhrases: f.StuckPhrases,
		Limits: core.Limits(f.Limits),
		Policy: core.Policy(f.Policy),
		Memory: core.Memory(f.Memory),
		Tools:  nil,
		Models: core.Models{},
	}
	cfg.Summary = core.Summary(f.Summary)
	if strings.TrimSpace(f.Name) == "" {
		return at("name", "name is empty")
	}
	if err := (core.Config{Name: f.Name, Models: core.Models{Primary: "probe"}, Format: cfg.Format}).Validate(); err != nil {
		return at("format", "%s", configMessage(err))
	}
	for _, l := range []struct {
		key string
		v   int
	}{
		{"max_steps", f.Limits.MaxSteps}, {"max_calls_per_turn", f.Limits.MaxCallsPerTurn},
		{"max_repeats", f.Limits.MaxRepeats}, {"max_corrections", f.Limits.MaxCorrections},
		{"max_escalations", f.Limits.MaxEscalations}, {"tool_result_bytes", f.Limits.ToolResultBytes},
		{"max_state_bytes", f.Limits.MaxStateBytes}, {"max_turns", f.Limits.MaxTurns},
	} {
		if l.v < 0 {
			return at("limits."+l.key, "limits.%s is negative (leave it out for the default)", l.key)
		}
	}
	for _, role := range slices.Sorted(maps.Keys(f.Models)) {
		if err := s.model(role, f.Models[role], &cfg.Models, checkFiles); err != nil {
			path := "models." + role
			var ke *keyError
			if errors.As(err, &ke) {
				path += "." + ke.key
			}
			return at(path, "models.%s: %v", role, err)
		}
	}
	if cfg.Models.Primary == "" {
		return at("models.primary", "[models.primary] is required")
	}
	if err := policies(f, &cfg, at); err != nil {
		return err
	}
	var err error
	if s.ToolTimeout, err = duration(f.Run.ToolTimeout); err != nil {
		return at("run.tool_timeout", "run.tool_timeout: %v", err)
	}
	if s.RunTimeout, err = duration(f.Run.RunTimeout); err != nil {
		return at("run.run_timeout", "run.run_timeout: %v", err)
	}
	s.MaxToolOutput = f.Run.MaxToolOutput
	switch p := shell.InDoubtPolicy(f.Run.InDoubt); p {
	case "":
		s.InDoubt = shell.InDoubtUnknown
	case shell.InDoubtUnknown, shell.InDoubtRerun, shell.InDoubtWait:
		s.InDoubt = p
	default:
		return at("run.in_doubt", "run.in_doubt %q is not one of unknown, rerun, wait", p)
	}
	if !enabled(f.ToolsEnabled) {
		cfg.Memory.Tools = false // every tool is off; recall is not a tool
	}
	var tableOf []int // the [[tools]] table of each of cfg.Tools
	for i, t := range f.Tools {
		if !enabled(f.ToolsEnabled) || !enabled(t.Enabled) {
			continue // off: decoded (its keys are checked), not built
		}
		specs, err := s.tools(t)
		if err != nil {
			path := fmt.Sprintf("tools.%d", i)
			var ke *keyError
			if errors.As(err, &ke) {
				path += "." + ke.key
			}
			return at(path, "tools[%d]: %v", i, err)
		}
		for range specs {
			tableOf = append(tableOf, i)
		}
		cfg.Tools = append(cfg.Tools, specs...)
	}
	agents, err := agentSpecs(f, s.Resolve, checkFiles, at)
	if err != nil {
		return err
	}
	s.agentTools = agents
	cfg.Tools = append(cfg.Tools, agents...)
	if err := cfg.Validate(); err != nil {
		// Name the tool's table, and its parameters key when the schema is
		// at fault.
		msg, path := configMessage(err), ""
		if m := toolIndex.FindStringSubmatch(msg); m != nil {
			if k, _ := strconv.Atoi(m[1]); k < len(tableOf) {
				path = fmt.Sprintf("tools.%d", tableOf[k])
				if first, _, _ := strings.Cut(msg, "; "); strings.Contains(first, ": parameters:") {
					path += ".parameters"
				}
				msg = fmt.Sprintf("tools[%d]", tableOf[k]) + msg[len(m[0]):]
			}
		}
		return at(path, "%s", msg)
	}
	s.SecretNames = secretNames(f)
	s.Config, s.base = cfg, cfg
	return nil
}

// toolIndex finds the tool a core.Config error starts with: tools[3].
var toolIndex = regexp.MustCompile(`^tools\[(\d+)\]`)

// configMessage is a core.Config error without its sentinel's text.
func configMessage(err error) string {
	return strings.TrimPrefix(err.Error(), core.ErrInvalidConfig.Error()+": ")
}

// parameters accepts a JSON Schema as JSON text (order kept) or a TOML table.
func parameters(v any) (json.RawMessage, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case string:
		var probe any
		if err := json.Unmarshal([]byte(p), &probe); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(p)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case map[string]any:
		return json.Marshal(p)
	}
	return nil, fmt.Errorf("want a JSON string or a table, found %T", v)
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like \"30s\" or \"2m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// Resolve makes a path from the agent file absolute, relative to its dir.
func (s *Spec) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}

// source is what a run stores to rebuild its agent.
type source struct {
	Path         string      `json:"path,omitempty"`
	Dir          string      `json:"dir"`
	TOML         string      `json:"toml"`
	Script       string      `json:"script,omitempty"`
	ScriptOffset int         `json:"script_offset,omitempty"`
	MCPTools     []core.Tool `json:"mcp_tools,omitempty"`
	// MCPOutputSchemas are the output schemas of the MCP tools that
	// declare one; MCPUnavailable the optional servers given up, with why.
	MCPOutputSchemas map[string]json.RawMessage `json:"mcp_output_schemas,omitempty"`
	MCPUnavailable   map[string]string          `json:"mcp_unavailable,omitempty"`
}

// FromSource rebuilds the Spec, and the build options, a run recorded.
func FromSource(b []byte) (*Spec, BuildOptions, error) {
	s, src, err := fromSource(b)
	if err != nil {
		return nil, BuildOptions{}, err
	}
	return s, BuildOptions{Script: src.Script, ScriptOffset: src.ScriptOffset}, nil
}

func fromSource(b []byte) (*Spec, source, error) {
	var src source
	if err := json.Unmarshal(b, &src); err != nil || src.TOML == "" {
		return nil, src, fmt.Errorf("%w: the run's stored agent is unreadable", ErrInvalid)
	}
	name := src.Path
	if name == "" {
		name = "stored agent"
	}
	s, err := parse([]byte(src.TOML), name, src.Dir, false)
	if err != nil {
		return nil, src, err
	}
	s.Path = src.Path
	if len(src.MCPTools) > 0 || len(src.MCPUnavailable) > 0 {
		rec := mcp.Record{Tools: src.MCPTools, OutputSchemas: src.MCPOutputSchemas, Unavailable: src.MCPUnavailable}
		cfg, err := s.withMCP(rec)
		if err != nil {
			return nil, src, fmt.Errorf("%w: the run's recorded MCP tools: %v", ErrInvalid, err)
		}
		s.Config, s.mcpRecord = cfg, &rec
	}
	return s, src, nil
}
