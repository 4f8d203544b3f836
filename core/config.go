package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Format names how the model writes tool calls: it selects a FormatSpec,
// built in or added to a Formats table.
type Format string

// The built-in tool-call formats (each declared in its own file and listed
// in builtinFormats). FormatAuto tries native calls first, then the text
// formats in the order given by autoOrder.
const (
	FormatNative  Format = "native"
	FormatXML     Format = "xml"
	FormatJSON    Format = "json"
	FormatFenced  Format = "fenced"
	FormatStrict  Format = "strict"
	FormatHelpers Format = "helpers"
	FormatAuto    Format = "auto"
)

// ToolMode says who executes a tool.
type ToolMode string

// Tool modes. Internal and MCP tools are run by the shell inside one turn;
// external tools pause the run until the caller supplies their results.
const (
	ModeInternal ToolMode = "internal"
	ModeExternal ToolMode = "external"
	ModeMCP      ToolMode = "mcp"
)

// Config is an agent: plain, serializable data. The zero value of a limit
// means "use the default" (see DefaultLimits). Compile works out what
// Start, Step and Resume need of it once (see Compile).
type Config struct {
	Name         string   `json:"name"`
	SystemPrompt string   `json:"system_prompt,omitempty"`
	Models       Models   `json:"models"`
	Format       Format   `json:"format,omitempty"`
	Tools        []Tool   `json:"tools,omitempty"`
	Memory       Memory   `json:"memory"`
	Limits       Limits   `json:"limits"`
	Policy       Policy   `json:"policy"`
	StuckPhrases []string `json:"stuck_phrases,omitempty"`
	// Summary shapes what the model reads of every tool's results (a tool's
	// own Summary replaces it). Zero: results are only cut to their byte cap.
	Summary Summary `json:"summary,omitzero"`
	// Collaboration turns on stuck detection by reply quality (quality.go).
	Collaboration *Collaboration `json:"collaboration,omitempty"`
	// Cycles turns on cycle detection beyond identical repeats (cycle.go).
	Cycles *Cycles `json:"cycles,omitempty"`
	// Budget bounds what a run may spend (budget.go).
	Budget Budget `json:"budget,omitzero"`
	// Conversation says what a user message does to a run at work and how
	// long one may be (conversation.go).
	Conversation ConversationPolicy `json:"conversation,omitzero"`
	// Context bounds what a request to the primary model holds, compacting
	// the conversation it is sent (context.go); nil: no bound.
	Context *ContextPolicy `json:"context,omitempty"`
	// Output makes the final answer a JSON value that fits a schema
	// (output.go); nil: free text.
	Output *OutputPolicy `json:"output,omitempty"`

	// compiled is set by Compile; never encoded (compile.go).
	compiled *compiledAgent
}

// Models names the model roles. Helper is optional; without it the agent
// never escalates.
type Models struct {
	Primary string `json:"primary"`
	Helper  string `json:"helper,omitempty"`
	// PrimaryPrice and HelperPrice are what each role's tokens cost, for
	// Budget.MaxCost (see Price).
	PrimaryPrice Price `json:"primary_price,omitzero"`
	HelperPrice  Price `json:"helper_price,omitzero"`
}

// Tool is one tool the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments (an object schema).
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Mode       ToolMode        `json:"mode,omitempty"`
	// Idempotent tools are re-run after a crash left their outcome unknown.
	Idempotent bool `json:"idempotent,omitempty"`
	// MaxResultBytes caps the output the model sees (0: Limits.ToolResultBytes).
	MaxResultBytes int `json:"max_result_bytes,omitempty"`
	// Summary, when set, replaces Config.Summary for this tool's results. It
	// is not part of what a model call is sent, so actions do not encode it.
	Summary *Summary `json:"summary,omitempty" cbor:"-"`
	// SummaryLabel is the form the tool declares for its summarized
	// results ("Web search results"): used when the summary in effect has
	// no Label of its own (see Summary.Label). Not encoded in actions.
	SummaryLabel string `json:"summary_label,omitempty" cbor:"-"`
	// EndsTurn makes a call of this tool, once it has run and succeeded,
	// end the user turn: its result is the answer and the model is not
	// called again (a transfer to a human, a final submission). Not
	// encoded in actions.
	EndsTurn bool `json:"ends_turn,omitempty" cbor:"-"`
}

// Memory enables the memory built-ins.
type Memory struct {
	// Tools adds memory_search, memory_create and memory_traverse.
	Tools bool `json:"tools,omitempty"`
	// Recall searches memory for the user's input before the first model call.
	Recall bool `json:"recall,omitempty"`
	// RecallLimit is how many hits recall asks for (0: 5).
	RecallLimit int `json:"recall_limit,omitempty"`
	// Namespace scopes memory (empty: the agent's name).
	Namespace string `json:"namespace,omitempty"`
}

// Limits bound a run. Zero means the default.
type Limits struct {
	MaxSteps        int `json:"max_steps,omitempty"`
	MaxCallsPerTurn int `json:"max_calls_per_turn,omitempty"`
	MaxRepeats      int `json:"max_repeats,omitempty"`
	MaxCorrections  int `json:"max_corrections,omitempty"`
	MaxEscalations  int `json:"max_escalations,omitempty"`
	ToolResultBytes int `json:"tool_result_bytes,omitempty"`
	MaxStateBytes   int `json:"max_state_bytes,omitempty"`
	// MaxTurns bounds the calls to the primary model (0: no bound but
	// MaxSteps); Policy.OnMaxTurns says what happens when it is reached.
	MaxTurns int `json:"max_turns,omitempty"`
}

// Policy holds the behavioural switches.
type Policy struct {
	// Parallel lets the shell run one turn's internal calls concurrently.
	Parallel bool `json:"parallel,omitempty"`
	// StopOnError skips the rest of a turn's calls after the first failure.
	StopOnError bool `json:"stop_on_error,omitempty"`
	// RejectUnknownArgs makes unknown arguments an error instead of dropping them.
	RejectUnknownArgs bool `json:"reject_unknown_args,omitempty"`
	// StrictNumbers refuses, where a schema says integer, a number written
	// with a fraction or an exponent (5.0, 5e0); JSON Schema accepts them.
	StrictNumbers bool `json:"strict_numbers,omitempty"`
	// HelpersSourceText, with format helpers, passes a call's argument
	// that is a Python expression outside the helpers subset as a string
	// holding its source text, with a warning in the step's ParseMeta,
	// instead of a correction (the SABRE design's rule; see "The helpers
	// format" in the package doc).
	HelpersSourceText bool `json:"helpers_source_text,omitempty"`
	// NoCorrections is true when MaxCorrections is meant to be zero.
	NoCorrections bool `json:"no_corrections,omitempty"`
	// ErrorPrefix is put in front of a failed call's error text in what the
	// model reads (for example "error: "). Empty by default: the model reads
	// the tool's error text exactly as the tool gave it.
	ErrorPrefix string `json:"error_prefix,omitempty"`
	// OnMaxTurns is what happens when Limits.MaxTurns is reached (limits.go).
	OnMaxTurns LimitPolicy `json:"on_max_turns,omitempty"`
	// Citations appends the run's sources to its final answer (citations.go).
	Citations Citations `json:"citations,omitempty"`
}

// DefaultLimits returns the limits used where a Config leaves one at zero.
// It is a function, not a variable, so that no package can change what
// every other one gets.
func DefaultLimits() Limits {
	return Limits{
		MaxSteps:        defaultMaxSteps,
		MaxCallsPerTurn: defaultMaxCallsPerTurn,
		MaxRepeats:      defaultMaxRepeats,
		MaxCorrections:  defaultMaxCorrections,
		MaxEscalations:  defaultMaxEscalations,
		ToolResultBytes: defaultToolResultBytes,
		MaxStateBytes:   defaultMaxStateBytes,
	}
}

// The default limits (DefaultLimits).
const (
	defaultMaxSteps        = 100
	defaultMaxCallsPerTurn = 16
	defaultMaxRepeats      = 3
	defaultMaxCorrections  = 1
	defaultMaxEscalations  = 1
	defaultToolResultBytes = 16 << 10
	defaultMaxStateBytes   = 8 << 20
)

// DefaultStuckPhrases returns the phrases that mark a primary reply as
// stuck (matched case-insensitively) when Config.StuckPhrases is empty: a
// new slice each time, so that no package can change them for another.
func DefaultStuckPhrases() []string { return slices.Clone(defaultStuckPhrases) }

var defaultStuckPhrases = []string{
	"i'm stuck",
	"i am stuck",
	"i don't know how to proceed",
	"i do not know how to proceed",
	"i cannot proceed",
}

// DefaultConfig returns a usable agent with the native format and default limits.
func DefaultConfig() Config {
	return Config{Name: "agent", Models: Models{Primary: "default"}, Format: FormatNative, Limits: DefaultLimits()}
}

// ErrInvalidConfig wraps every configuration error returned by Start.
var ErrInvalidConfig = errors.New("invalid config")

// validate reports every problem of c, against the format table it was
// compiled with (the built-in formats when it was not).
func (c Config) validate() error {
	_, err := c.compile(c.Formats())
	return err
}

// check reports every problem of c and fills in out, its compiled form:
// the format looked up in out.formats, the schemas compiled.
func (c Config) check(out *compiledAgent) error {
	var errs []string
	if strings.TrimSpace(c.Name) == "" {
		errs = append(errs, "name is empty")
	}
	if c.Models.Primary == "" {
		errs = append(errs, "models.primary is empty")
	}
	if c.namespace() == AllNamespaces {
		errs = append(errs, fmt.Sprintf("memory namespace %q stands for every namespace; name another", AllNamespaces))
	}
	var known bool
	if out.spec, known = out.formats.Lookup(out.format); !known {
		errs = append(errs, unknownFormatText(c.Format, out.formats))
	}
	for _, l := range []struct {
		name string
		v    int
	}{
		{"max_steps", c.Limits.MaxSteps}, {"max_calls_per_turn", c.Limits.MaxCallsPerTurn},
		{"max_repeats", c.Limits.MaxRepeats}, {"max_corrections", c.Limits.MaxCorrections},
		{"max_escalations", c.Limits.MaxEscalations}, {"tool_result_bytes", c.Limits.ToolResultBytes},
		{"max_state_bytes", c.Limits.MaxStateBytes}, {"max_turns", c.Limits.MaxTurns},
	} {
		if l.v < 0 {
			errs = append(errs, fmt.Sprintf("limits.%s is negative", l.name))
		}
	}
	errs = append(errs, c.Summary.problems("summary")...)
	errs = append(errs, c.policyErrors()...)
	seen := map[string]bool{}
	for i, t := range c.tools() {
		where := fmt.Sprintf("tools[%d] %q", i, t.Name)
		switch {
		case !ValidToolName(t.Name):
			errs = append(errs, where+": name must be 1-64 letters, digits, '_', '-' or '.'")
		case seen[t.Name]:
			errs = append(errs, where+": duplicate tool name")
		}
		seen[t.Name] = true
		switch t.mode() {
		case ModeInternal, ModeExternal, ModeMCP:
		default:
			errs = append(errs, fmt.Sprintf("%s: mode %q is not one of internal, external, mcp", where, t.Mode))
		}
		if t.MaxResultBytes < 0 {
			errs = append(errs, where+": max_result_bytes is negative")
		}
		if t.Summary != nil {
			errs = append(errs, t.Summary.problems(where+": summary")...)
		}
		if s, err := c.argSchema(t); err != nil {
			errs = append(errs, fmt.Sprintf("%s: parameters: %v", where, err))
		} else {
			out.schemas[t.Name] = compiledSchema{raw: t.Parameters, schema: s}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(errs, "; "))
}

// Validate reports whether the config is usable, naming every problem. A
// config names a built-in format or, once compiled (Compile), one of the
// table it was compiled with.
func (c Config) Validate() error { return c.validate() }

// ValidToolName reports whether s is a usable tool name: 1 to 64 letters,
// digits, '_', '-' or '.'.
func ValidToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		ok := r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func (c Config) format() Format {
	if c.Format == "" {
		return FormatNative
	}
	return c.Format
}

func (t Tool) mode() ToolMode {
	if t.Mode == "" {
		return ModeInternal
	}
	return t.Mode
}

func pick(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func (c Config) maxSteps() int { return pick(c.Limits.MaxSteps, defaultMaxSteps) }
func (c Config) maxCallsPerTurn() int {
	return pick(c.Limits.MaxCallsPerTurn, defaultMaxCallsPerTurn)
}
func (c Config) maxRepeats() int { return pick(c.Limits.MaxRepeats, defaultMaxRepeats) }
func (c Config) maxEscalations() int {
	return pick(c.Limits.MaxEscalations, defaultMaxEscalations)
}
func (c Config) maxStateBytes() int { return pick(c.Limits.MaxStateBytes, defaultMaxStateBytes) }
func (c Config) recallLimit() int   { return pick(c.Memory.RecallLimit, 5) }

func (c Config) maxCorrections() int {
	if c.Policy.NoCorrections {
		return 0
	}
	return pick(c.Limits.MaxCorrections, defaultMaxCorrections)
}

func (c Config) resultCap(t Tool) int {
	return pick(t.MaxResultBytes, pick(c.Limits.ToolResultBytes, defaultToolResultBytes))
}

func (c Config) namespace() string {
	if c.Memory.Namespace != "" {
		return c.Memory.Namespace
	}
	return c.Name
}

func (c Config) stuckPhrases() []string {
	if len(c.StuckPhrases) > 0 {
		return c.StuckPhrases
	}
	return defaultStuckPhrases
}

// tools is the agent's tool list including enabled built-ins, in a fixed order.
func (c Config) tools() []Tool {
	if !c.Memory.Tools {
		return c.Tools
	}
	out := make([]Tool, 0, len(c.Tools)+3)
	out = append(out, c.Tools...)
	return append(out, memoryTools...)
}

// ToolList returns the tools the model sees (configured plus enabled built-ins).
func (c Config) ToolList() []Tool { return c.tools() }

// tool finds a tool by name without building the combined list: it is
// looked up for every call and every result.
func (c Config) tool(name string) (Tool, bool) {
	for _, t := range c.Tools {
		if t.Name == name {
			return t, true
		}
	}
	if c.Memory.Tools {
		for _, t := range memoryTools {
			if t.Name == name {
				return t, true
			}
		}
	}
	return Tool{}, false
}
