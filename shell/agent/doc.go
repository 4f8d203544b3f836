// Package agent loads agent files (TOML) into a core.Config plus the live
// parts the shell needs (model providers, tool implementations).
//
// An agent file:
//
//	name = "coder"
//	system_prompt = "You write and run small programs."
//	format = "native"            # native | xml | json | fenced | strict | helpers | auto
//
//	[models.primary]
//	provider = "openai"          # openai | openai-responses | anthropic | script: see Providers
//	model = "gpt-4o-mini"
//	base_url = "https://api.openai.com/v1"
//	api_key_env = "OPENAI_API_KEY"   # the variable's name; the key is never stored
//
//	[models.primary.retry]       # optional, the HTTP providers: see Retries
//	attempts = 6
//	backoff = "1s"
//	max_backoff = "20s"
//	max_elapsed = "3m"
//	jitter = 0.1
//
//	[models.helper]              # optional: escalation target
//	provider = "script"
//	script = "../scripts/helper.jsonl"   # relative to this file; must exist
//
//	[limits]                     # max_steps, max_calls_per_turn, max_repeats, max_corrections,
//	max_steps = 20               # max_escalations, tool_result_bytes, max_state_bytes
//	[policy]                     # parallel, stop_on_error, reject_unknown_args, error_prefix
//	[memory]                     # tools, recall, recall_limit, namespace
//	[run]                        # tool_timeout, run_timeout, max_tool_output, in_doubt
//
//	[[tools]]                    # a built-in tool, with its options
//	builtin = "run_code"
//	languages = ["python3"]
//	secrets = ["GITHUB_TOKEN"]   # see Secrets
//
//	[[tools]]                    # an external tool: the run pauses for the caller
//	name = "approve"
//	mode = "external"
//	description = "Ask a human to approve a payment."
//	parameters = '''{"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}'''
//
//	[[tools]]                    # a command tool: argv template, no shell
//	name = "word_count"
//	command = ["wc", "-w"]
//	stdin = "{{text}}"
//	idempotent = true
//	retry = { attempts = 4, backoff = "200ms" }
//	parameters = '''{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}'''
//
// parameters may be a JSON string (property order kept, which the helpers
// format uses for positional arguments) or a TOML table (properties sorted).
// Unknown keys and values of the wrong type are errors naming the file, line
// and column; the errors found after decoding (a bad schema, a negative
// limit, an unknown format, a bad duration, a missing script) name the file
// and the line of the key at fault, or of its table.
//
// A model's script (provider = "script") is read when the file is parsed,
// so `stepwise validate` reports a missing or malformed one. The CLI's
// --script overrides the primary model's; a relative --script is relative
// to the current directory, and a run records it as an absolute path, so
// resume finds it again.
//
// # Providers
//
// provider selects how a model is called:
//
//   - "openai": OpenAI-compatible chat completions (OpenAI, Azure, Ollama,
//     vLLM, the llama.cpp server), through go-openai. base_url defaults to
//     https://api.openai.com/v1.
//   - "openai-responses": the OpenAI Responses API, through openai-go.
//     Requests are stateless (store = false); a reply's reasoning items are
//     kept with the run and sent back on the next request. Its own keys:
//     reasoning_effort ("minimal", "low", "medium", "high") and
//     reasoning_summary ("auto", "concise", "detailed"; some organisations
//     must be verified for it).
//   - "anthropic": the Anthropic Messages API, through anthropic-sdk-go.
//     base_url defaults to https://api.anthropic.com; max_tokens defaults
//     to 8192 (the API requires one). Its own key: thinking_budget (tokens,
//     at least 1024 and below max_tokens) turns extended thinking on; the
//     signed thinking is kept with the run and sent back.
//   - "script": answers from a JSONL file (script = PATH), for demos and
//     tests.
//
// The three HTTP providers take model (required), base_url, api_key_env
// (the name of the variable holding the key, read when the agent is built;
// the key is a secret, see Secrets), timeout (how long an attempt may
// receive nothing, default "60s"), temperature, max_tokens, a retry table
// (see Retries) and stream. They stream their replies by default: the CLI
// and the service show a reply as it arrives; stream = false sends
// unstreamed requests, for servers that cannot stream. A run stores the
// same reply either way. A key that only some providers take is an error
// on the others.
//
// # Retries
//
// A retry table says how a transient failure (a 429, a 5xx, a refused
// connection, a timeout) is retried: attempts (the first included; 1 means
// no retries), backoff (the wait before the first retry, doubled for each
// further one), max_backoff (its cap), max_elapsed (no retry starts later
// than this after the first attempt) and jitter (each wait is scaled by a
// random factor in [1-jitter, 1+jitter]; 0 turns it off). Durations are
// strings like "200ms", "30s", "3m". A key left out takes its default:
// shell.DefaultModelRetry for a model (5 attempts, 500ms, 30s, 2m, 0.2),
// shell.DefaultToolRetry for a tool (3 attempts, 200ms, 5s, 30s, 0.2).
// A model's retries cover a stream that breaks off half way too: the whole
// request is made again. When a model's retries run out the run stalls
// (resumable with `stepwise resume`); a permanent failure (a 401, a 404, a
// malformed request) is never retried and fails the run. A model's older max_retries = N still works
// (N+1 attempts; -1 for none), but not together with retry.attempts.
//
// A tool table's retry applies to each tool the table makes (all three for
// builtin = "files"). Only idempotent tools are retried, so a retry on a
// table none of whose tools is idempotent is an error, as is one on an
// external tool (the caller runs it).
//
// # Secrets
//
// The values of the environment variables an agent names as secret are
// kept out of everything a run stores, exports or prints, and out of the
// tool output the model reads. They are: each model's api_key_env,
// web_search's api_key_env (BRAVE_API_KEY by default for the brave
// backend), every variable an [[mcp]] table's headers or env values
// reference as ${VAR} (or $VAR), and those a command tool or run_code lists
// in secrets = ["NAME", ...]. A tool's environment holds a secret only if
// the tool asks for it by name in secrets: a command tool's or run_code's
// process inherits nothing of the runner's environment but a minimal PATH
// and what its env and secrets name. A variable named only in env is passed
// too, but is not a secret.
//
// # In-doubt calls
//
// [run] in_doubt decides what happens to a call that is not idempotent and
// was in flight when its run stopped (a crash, a kill), so that nobody
// knows whether it ran:
//
//   - "unknown" (the default): the model is told the outcome is unknown.
//   - "rerun": the call runs again.
//   - "wait": the run stalls until an operator says what the call did, or
//     that it did not run, with `stepwise resume RUN --results FILE`.
//
// # Error prefix
//
// [policy] error_prefix is put in front of a failed call's error text in
// what the model reads (for example "error: "). It is empty by default: the
// model reads a tool's error text verbatim.
package agent
