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
//	provider = "openai"          # openai | script
//	model = "gpt-4o-mini"
//	base_url = "https://api.openai.com/v1"
//	api_key_env = "OPENAI_API_KEY"   # the variable's name; the key is never stored
//
//	[models.primary.retry]       # optional, provider openai: see Retries
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
//	max_steps = 20               # max_escalations, tool_result_bytes, max_state_bytes, max_turns
//	[policy]                     # parallel, stop_on_error, reject_unknown_args, error_prefix,
//	                             # on_max_turns, citations
//	[memory]                     # tools, recall, recall_limit, namespace
//	[run]                        # tool_timeout, run_timeout, max_tool_output, in_doubt
//	[collaboration]              # threshold, max_retries: see Run limits
//	[cycles]                     # max_period, repeats, no_progress
//	[budget]                     # max_input_tokens, max_output_tokens, max_cost, max_tool_calls
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
// When a model's retries run out the run stalls (resumable with `stepwise
// resume`); a permanent failure (a 401, a 404, a malformed request) is never
// retried and fails the run. A model's older max_retries = N still works
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
// # Run limits
//
// Each of these is off when its key or table is left out, and the run
// behaves as it did before they existed. ADR 0017 explains them.
//
// [limits] max_turns bounds the calls to the primary model (EDISON's loop
// has 5), beside max_steps, which bounds every request. [policy]
// on_max_turns says what happens when the turns are used up: "fail" (the
// default) fails the run with max_turns; "answer" asks the model once more,
// without tools, for a final answer from what it has learned, and the run
// completes with it (or fails with max_turns if the reply has none).
//
// [budget] bounds what one run spends: max_input_tokens and
// max_output_tokens (the tokens every model reply reports, helper included),
// max_cost (in the currency of the prices) and max_tool_calls (the calls
// accepted to run). Budgets are checked before every request: a model call
// is made only while every token and cost budget has some left, and a
// reply's tool calls are requested only while they have, and if they fit
// in max_tool_calls. When one is used up the run fails with
// budget_exhausted and a reason naming the budget. What a model call costs
// is known only when it returns, so a run ends at most one call's usage past
// a token or cost budget; max_tool_calls is never passed. A final answer is
// never refused. Prices are per million tokens, in [models.ROLE]:
//
//	[models.primary]
//	input_price_per_million = 0.15
//	output_price_per_million = 0.60
//	[budget]
//	max_cost = 0.50
//
// Prices and max_cost are exact to six decimal places (micro-units); a
// cost is kept as an integer (10^-12 of the currency), so it never drifts.
// max_cost needs the prices of every model the agent has.
//
// [cycles] turns on cycle detection beyond max_repeats (which stops the
// same call made again and again): a block of 2 to max_period calls (default
// 4) seen repeats times in a row (default 2; left, right, left, right is
// one), and no_progress calls in a row (default 6; 0 turns it off) each
// returning exactly what an identical earlier call returned. The first
// detection tells the model (the calls that close a cycle are not run); the
// next one fails the run with cycle.
//
// [collaboration] pairs [models.primary] with [models.helper] (which it
// needs) by reply quality, as the AI Battle design's stuck detection does:
// each primary reply gets a score from 0 to 1 (core.Quality: empty,
// refusal, hedging, repeated, no progress), and after max_retries (default
// 3) replies in a row below threshold (default 0.7) the helper is asked
// for a plan. A low-quality final answer is retried while the helper can
// still be asked. The design's stuck phrases ("I'm not sure how to", "I'm
// unable to", ...) join stuck_phrases' defaults and ask the helper at once.
// A stepwise agent has one primary and one helper, so it has one pair:
// the design's list of pairs is one agent file per pair.
//
// [policy] citations appends to the final answer "sources" ("\n\nSources:
// a, b": the sources the tools reported, or the tools used when they
// reported none), "tags" ("\n\n[source:tool] ..." for each tool used) or
// "both". tools_used lists only the tools whose calls ran.
//
// # Error prefix
//
// [policy] error_prefix is put in front of a failed call's error text in
// what the model reads (for example "error: "). It is empty by default: the
// model reads a tool's error text verbatim.
package agent
