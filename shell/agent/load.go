package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
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

	impls []shell.Tool // built-in and command tools, in config order
	// mcpRecorded is the MCP tool list a run saw, once listed or restored.
	mcpRecorded []core.Tool
}

// Load reads and validates the agent file at path.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agent: %w", err)
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
// relative paths.
func Parse(data []byte, name, dir string) (*Spec, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, tomlError(name, err)
	}
	s := &Spec{File: f, Dir: dir, Text: data, ToolTimeouts: map[string]time.Duration{}}
	if err := s.convert(name, data); err != nil {
		return nil, err
	}
	return s, nil
}

func tomlError(name string, err error) error {
	var sme *toml.StrictMissingError
	if errors.As(err, &sme) {
		msgs := make([]string, 0, len(sme.Errors))
		for _, e := range sme.Errors {
			row, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: unknown key %q", name, row, col, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("%w: %s:%d:%d: %s", ErrInvalid, name, row, col, de.Error())
	}
	return fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
}

func (s *Spec) convert(name string, data []byte) error {
	f := s.File
	at := func(line int, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, name, line, fmt.Sprintf(format, args...))
	}
	cfg := core.Config{
		Name: f.Name, SystemPrompt: f.SystemPrompt, Format: core.Format(f.Format), StuckPhrases: f.StuckPhrases,
		Limits: core.Limits(f.Limits),
		Policy: core.Policy(f.Policy),
		Memory: core.Memory(f.Memory),
		Tools:  nil,
		Models: core.Models{},
	}
	for role, m := range f.Models {
		line := lineOf(data, `^\[models\.`+regexp.QuoteMeta(role)+`\]`)
		switch role {
		case "primary", "helper":
		default:
			return at(line, "models.%s: the roles are primary and helper", role)
		}
		switch m.Provider {
		case "openai":
			if m.Model == "" {
				return at(line, "models.%s: model is required for provider openai", role)
			}
		case "script":
			if m.Script == "" {
				return at(line, "models.%s: script is required for provider script", role)
			}
		default:
			return at(line, "models.%s: provider %q is not one of openai, script", role, m.Provider)
		}
		if _, err := duration(m.Timeout); err != nil {
			return at(line, "models.%s: timeout: %v", role, err)
		}
		label := m.Model
		if label == "" {
			label = m.Provider + ":" + filepath.Base(m.Script)
		}
		if role == "primary" {
			cfg.Models.Primary = label
		} else {
			cfg.Models.Helper = label
		}
	}
	if cfg.Models.Primary == "" {
		return at(1, "[models.primary] is required")
	}
	var err error
	if s.ToolTimeout, err = duration(f.Run.ToolTimeout); err != nil {
		return at(lineOf(data, `^tool_timeout`), "run.tool_timeout: %v", err)
	}
	if s.RunTimeout, err = duration(f.Run.RunTimeout); err != nil {
		return at(lineOf(data, `^run_timeout`), "run.run_timeout: %v", err)
	}
	s.MaxToolOutput = f.Run.MaxToolOutput
	toolLines := linesOf(data, `^\[\[tools\]\]`)
	for i, t := range f.Tools {
		line := 0
		if i < len(toolLines) {
			line = toolLines[i]
		}
		impls, err := s.implsFor(t)
		if err != nil {
			return at(line, "tools[%d]: %v", i, err)
		}
		specs, err := s.specsFor(t, impls)
		if err != nil {
			return at(line, "tools[%d]: %v", i, err)
		}
		if d, _ := duration(t.Timeout); d > 0 {
			for _, ct := range specs {
				s.ToolTimeouts[ct.Name] = d + toolGrace
			}
		}
		s.impls = append(s.impls, impls...)
		cfg.Tools = append(cfg.Tools, specs...)
	}
	if err := cfg.Validate(); err != nil {
		// Point at the tool's table when the config error names one.
		if m := regexp.MustCompile(`tools\[(\d+)\]`).FindStringSubmatch(err.Error()); m != nil {
			if i, _ := strconv.Atoi(m[1]); i < len(toolLines) {
				return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, name, toolLines[i], strings.TrimPrefix(err.Error(), core.ErrInvalidConfig.Error()+": "))
			}
		}
		return fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
	}
	s.Config = cfg
	return nil
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

func lineOf(data []byte, pattern string) int {
	if l := linesOf(data, pattern); len(l) > 0 {
		return l[0]
	}
	return 0
}

func linesOf(data []byte, pattern string) []int {
	re := regexp.MustCompile(pattern)
	var out []int
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(strings.TrimSpace(l)) {
			out = append(out, i+1)
		}
	}
	return out
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
	s, err := Parse([]byte(src.TOML), name, src.Dir)
	if err != nil {
		return nil, src, err
	}
	s.Path = src.Path
	if len(src.MCPTools) > 0 {
		s.mcpRecorded = src.MCPTools
		s.Config.Tools = append(s.Config.Tools, src.MCPTools...)
		if err := s.Config.Validate(); err != nil {
			return nil, src, fmt.Errorf("%w: the run's recorded MCP tools: %v", ErrInvalid, err)
		}
	}
	return s, src, nil
}
