package agent

import (
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

// File is the TOML shape of an agent file.
type File struct {
	// Preset names a reference design whose defaults the file starts from
	// (preset.go); the keys the file sets win.
	Preset       string   `toml:"preset"`
	Name         string   `toml:"name"`
	SystemPrompt string   `toml:"system_prompt"`
	Format       string   `toml:"format"`
	StuckPhrases []string `toml:"stuck_phrases"`
	// ToolsEnabled = false switches every tool off ([[tools]], [[mcp]]
	// and the memory tools): the model is declared none.
	ToolsEnabled *bool            `toml:"tools_enabled"`
	Models       map[string]Model `toml:"models"`
	Limits       Limits           `toml:"limits"`
	Policy       Policy           `toml:"policy"`
	Memory       Memory           `toml:"memory"`
	Run          Run              `toml:"run"`
	Tools        []ToolTable      `toml:"tools"`
	MCP          []MCPServer      `toml:"mcp"`
	// Summary is the [summary] table: how the model reads list-like JSON
	// results of every tool (a tool table's summary replaces it).
	Summary Summary `toml:"summary"`
	// The run-limit policies (policies.go).
	Collaboration *Collaboration `toml:"collaboration"`
	Cycles        *Cycles        `toml:"cycles"`
	Budget        Budget         `toml:"budget"`
	// Conversation is the [conversation] table (core.ConversationPolicy).
	Conversation Conversation `toml:"conversation"`
	// Context is the [context] table (context.go).
	Context *Context `toml:"context"`
	// Output is the [output] table (context.go).
	Output *Output `toml:"output"`
	// Agents are the [[agents]] tables: sub-agents called as tools
	// (subagents.go).
	Agents []AgentTable `toml:"agents"`
}

// Conversation mirrors core.ConversationPolicy.
type Conversation struct {
	// OnMessage is queue (the default) or interrupt.
	OnMessage       core.OnMessage `toml:"on_message"`
	MaxMessageBytes int            `toml:"max_message_bytes"`
}

// Summary mirrors core.Summary: [summary], or a tool table's summary key.
type Summary struct {
	Items     int    `toml:"items"`
	ItemChars int    `toml:"item_chars"`
	MaxBytes  int    `toml:"max_bytes"`
	Label     string `toml:"label"`
}

// Model configures one model role: the keys the providers read
// (provider.Settings, in the same table) and the shell's own, the retry
// table and the prices.
type Model struct {
	provider.Settings
	// Retry is the [models.ROLE.retry] table (the HTTP providers).
	Retry *Retry `toml:"retry"`
	// Prices per million tokens, for [budget] max_cost (policies.go).
	InputPricePerMillion  *float64 `toml:"input_price_per_million"`
	OutputPricePerMillion *float64 `toml:"output_price_per_million"`
	// ContextWindow is the model's context window in tokens, for
	// [context] (a well-known model's is known without it).
	ContextWindow int `toml:"context_window"`
}

// Retry is a retry table: [models.ROLE.retry], or a tool table's retry key.
// Durations are strings like "30s"; a key left out takes its default
// (shell.DefaultModelRetry, shell.DefaultToolRetry).
type Retry struct {
	// Attempts counts the first attempt: 1 means no retries.
	Attempts   *int   `toml:"attempts"`
	Backoff    string `toml:"backoff"`
	MaxBackoff string `toml:"max_backoff"`
	MaxElapsed string `toml:"max_elapsed"`
	// Jitter is in [0, 1]; 0 turns it off.
	Jitter *float64 `toml:"jitter"`
}

// Limits mirrors core.Limits.
type Limits struct {
	MaxSteps        int `toml:"max_steps"`
	MaxCallsPerTurn int `toml:"max_calls_per_turn"`
	MaxRepeats      int `toml:"max_repeats"`
	MaxCorrections  int `toml:"max_corrections"`
	MaxEscalations  int `toml:"max_escalations"`
	ToolResultBytes int `toml:"tool_result_bytes"`
	MaxStateBytes   int `toml:"max_state_bytes"`
	MaxTurns        int `toml:"max_turns"`
}

// Policy mirrors core.Policy.
type Policy struct {
	Parallel          bool   `toml:"parallel"`
	StopOnError       bool   `toml:"stop_on_error"`
	RejectUnknownArgs bool   `toml:"reject_unknown_args"`
	StrictNumbers     bool   `toml:"strict_numbers"`
	HelpersSourceText bool   `toml:"helpers_source_text"`
	NoCorrections     bool   `toml:"no_corrections"`
	ErrorPrefix       string `toml:"error_prefix"`
	// OnMaxTurns is fail (the default) or answer; Citations is sources,
	// tags or both.
	OnMaxTurns core.LimitPolicy `toml:"on_max_turns"`
	Citations  core.Citations   `toml:"citations"`
}

// Memory mirrors core.Memory.
type Memory struct {
	Tools       bool   `toml:"tools"`
	Recall      bool   `toml:"recall"`
	RecallLimit int    `toml:"recall_limit"`
	Namespace   string `toml:"namespace"`
}

// Run holds the shell's limits for runs of this agent.
type Run struct {
	ToolTimeout   string `toml:"tool_timeout"`
	RunTimeout    string `toml:"run_timeout"`
	MaxToolOutput int    `toml:"max_tool_output"`
	// InDoubt is unknown (the default), rerun or wait: see shell.InDoubtPolicy.
	InDoubt string `toml:"in_doubt"`
}

// ToolTable is one [[tools]] entry: a built-in (builtin = NAME), an external
// tool (mode = "external"), or a command tool (command = [...]). Options that
// do not apply to its kind are errors.
type ToolTable struct {
	// Enabled = false switches the table's tools off without deleting
	// them: they are neither declared to the model nor runnable.
	Enabled        *bool    `toml:"enabled"`
	Builtin        string   `toml:"builtin"`
	Name           string   `toml:"name"`
	Description    string   `toml:"description"`
	Mode           string   `toml:"mode"`
	Parameters     any      `toml:"parameters"`
	Idempotent     *bool    `toml:"idempotent"`
	Timeout        string   `toml:"timeout"`
	MaxResultBytes int      `toml:"max_result_bytes"`
	Summary        *Summary `toml:"summary"`
	// EndsTurn makes a successful call of the table's tools end the user
	// turn with its result as the answer (core.Tool.EndsTurn).
	EndsTurn    bool     `toml:"ends_turn"`
	Command     []string `toml:"command"`
	Stdin       string   `toml:"stdin"`
	Dir         string   `toml:"dir"`
	Env         []string `toml:"env"`
	PassContext bool     `toml:"pass_context"`
	MaxOutput   int      `toml:"max_output"`
	// Secrets names variables passed into the tool's environment, like Env,
	// that are secret (command tools and run_code).
	Secrets []string `toml:"secrets"`
	Retry   *Retry   `toml:"retry"`
	// View lists what of the run a command tool gets with each call
	// (shell.View): run_id, step, agent, tools_used, messages:N.
	View []string `toml:"view"`
	// OutputSchema is the JSON Schema a command tool's output must fit,
	// as JSON text or a table, like parameters.
	OutputSchema any `toml:"output_schema"`
	// Cache is "run" (results reused within a run) or a duration (reused
	// across runs of the agent for that long), for idempotent tools.
	Cache string `toml:"cache"`
	// Rate is "N/s", "N/min" or "N/h": at most N calls of the table's
	// tools in that window, across this process's runs (shell.Rate).
	Rate string `toml:"rate"`
	// Built-in options.
	Languages  []string `toml:"languages"`
	Root       string   `toml:"root"`
	AllowHosts []string `toml:"allow_hosts"`
	MaxBytes   int      `toml:"max_bytes"`
	Backend    string   `toml:"backend"`
	BaseURL    string   `toml:"base_url"`
	APIKeyEnv  string   `toml:"api_key_env"`
	MaxResults int      `toml:"max_results"`
	Path       string   `toml:"path"`
	MaxRows    int      `toml:"max_rows"`
	// Model is generate_image's image model.
	Model string `toml:"model"`
}

// MCPServer is one [[mcp]] entry (see the MCP support).
type MCPServer struct {
	// Enabled = false leaves the server off: it is not started and its
	// tools are not declared.
	Enabled    *bool             `toml:"enabled"`
	Name       string            `toml:"name"`
	Command    string            `toml:"command"`
	Args       []string          `toml:"args"`
	Env        map[string]string `toml:"env"`
	URL        string            `toml:"url"`
	Headers    map[string]string `toml:"headers"`
	Allow      []string          `toml:"allow"`
	Deny       []string          `toml:"deny"`
	Timeout    string            `toml:"timeout"`
	Idempotent bool              `toml:"idempotent"`
	// CancelGrace bounds how long the server has, after a call that timed
	// out was cancelled, to answer a ping before it is stopped.
	CancelGrace string `toml:"cancel_grace"`
	// Roots are offered to the server as its roots (paths relative to the
	// agent file, or file:// URIs); without any, no roots capability.
	Roots []string `toml:"roots"`
	// Required = false makes the server optional: when it cannot start or
	// dies for good, its tools are withdrawn and the run goes on.
	Required *bool `toml:"required"`
	// MaxAttachmentBytes bounds one image or sound kept for the model.
	MaxAttachmentBytes int `toml:"max_attachment_bytes"`
}
