// Package agent loads agent files (TOML) into a core.Config plus the live
// parts the shell needs (model providers, tool implementations).
//
// An agent file holds at most MaxFileBytes (1 MiB): Load refuses a larger
// one from its size before reading it, and Parse refuses larger text
// (ErrTooLarge, which wraps ErrInvalid).
//
// An agent file:
//
//	preset = "edison"            # optional: see Presets
//	name = "coder"
//	system_prompt = "You write and run small programs."
//	format = "native"            # native | xml | json | fenced | strict | helpers | auto
//	tools_enabled = true         # false: no tool at all (see Switching tools off)
//
//	[models.primary]
//	provider = "openai"          # a provider of the provider table: see Providers
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
//	accepts = ["image"]          # optional, provider openai: see Attachments
//
//	[models.helper]              # optional: escalation target
//	provider = "script"
//	script = "../scripts/helper.jsonl"   # relative to this file; must exist
//
//	[limits]                     # max_steps, max_calls_per_turn, max_repeats, max_corrections,
//	max_steps = 20               # max_escalations, tool_result_bytes, max_state_bytes, max_turns
//	[policy]                     # parallel, stop_on_error, reject_unknown_args, strict_numbers, error_prefix,
//	                             # on_max_turns, citations, helpers_source_text
//	[memory]                     # tools, recall, recall_limit, namespace
//	[run]                        # tool_timeout, run_timeout, max_tool_output, in_doubt
//	[summary]                    # items, item_chars, max_bytes: see Result summaries
//	[collaboration]              # threshold, max_retries: see Run limits
//	[cycles]                     # enabled (on without the table), max_period, repeats, no_progress
//	[budget]                     # max_input_tokens, max_output_tokens, max_cost, max_tool_calls, per
//	[conversation]               # on_message, max_message_bytes: see Conversations
//	[context]                    # max_tokens, max_fraction, keep_turns, strategies, summarizer,
//	                             # summary_words, enabled: see Context compaction
//	[output]                     # schema, max_corrections: see Structured output
//	[[agents]]                   # name, file, description, parameters, mode: see Sub-agents
//
//	[[tools]]                    # a built-in tool, with its options
//	builtin = "run_code"
//	languages = ["python3"]      # or python; javascript for node; bash
//	secrets = ["GITHUB_TOKEN"]   # see Secrets
//
//	[[tools]]
//	builtin = "web_search"
//	enabled = false              # off, kept for later (see Switching tools off)
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
//	summary = { items = 3, item_chars = 200, max_bytes = 900 }   # see Result summaries
//	parameters = '''{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}'''
//
//	[[tools]]                    # a command tool that sees its run and answers JSON
//	name = "summarize"
//	command = ["./summarize.py"]
//	view = ["run_id", "step", "tools_used", "messages:5"]   # see Views
//	output_schema = '''{"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}'''
//	idempotent = true
//	cache = "1h"                 # "run", or a duration: see Caching
//
// parameters may be a JSON string (property order kept, which the helpers
// format uses for positional arguments) or a TOML table (properties sorted).
// With format = "helpers" the model writes small Python-style programs
// whose calls can use earlier calls' results ("The helpers format" in
// package core; `stepwise tools FILE` shows what the model is told).
// [policy] helpers_source_text = true passes a call's argument that is a
// Python expression outside that subset (len(x), a.upper(), a
// comprehension, an undefined name) as a string holding its source text,
// with a warning recorded in the step, instead of a correction; text that
// is not Python stays a correction.
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
// # Presets
//
// preset = NAME starts the file from the defaults of one of the reference
// designs stepwise unifies; every key the file writes itself wins (even
// written as false or 0). A preset only fills keys; `stepwise tools`
// shows the result.
//
//	preset      what it sets
//	sabre       format = "helpers"; [policy] helpers_source_text = true
//	ai_battle   format = "fenced"; with a [models.helper], [collaboration]
//	            threshold = 0.7, max_retries = 3
//	caxton      format = "native"; [memory] tools = true; [cycles]
//	            max_period = 4, repeats = 2 (no_progress 6)
//	torchrl     format = "xml"; [policy] stop_on_error = true
//	edison      format = "strict"; [limits] max_turns = 5,
//	            max_corrections = 1; [policy] on_max_turns = "answer",
//	            strict_numbers = true, citations = "sources";
//	            [run] tool_timeout = "12s";
//	            [summary] items = 3, item_chars = 200, max_bytes = 900
//
// # Providers
//
// provider selects how a model is called. The providers are the entries of
// the provider table, shell/models.Providers, whose package doc describes
// each and its own keys: "openai" (OpenAI-compatible chat completions:
// OpenAI, Azure, Ollama, vLLM, the llama.cpp server), "openai-responses"
// (the OpenAI Responses API), "anthropic" (the Anthropic Messages API) and
// "script" (answers from a JSONL file, script = PATH, for demos and tests).
//
// The HTTP providers take model (required), base_url, api_key_env
// (the name of the variable holding the key, read when the agent is built;
// the key is a secret, see Secrets), timeout (how long an attempt may
// receive nothing, default "60s"), temperature, max_tokens, a retry table
// (see Retries) and stream. They stream their replies by default: the CLI
// and the service show a reply as it arrives; stream = false sends
// unstreamed requests, for servers that cannot stream. A run stores the
// same reply either way. A key that only some providers take is an error
// on the others, naming the providers that take it.
//
// Nothing in this package names a provider: checking a [models.ROLE]
// table (its required keys, the keys only some providers take, the values
// of the provider's own keys) and building its model go through the
// provider's entry (shell/models/provider.Entry), and so does telemetry's
// description of it. Adding a provider is writing its package under
// shell/models, with a func Entry() provider.Entry (and, for a key no
// provider read before, a field of provider.Settings, which Model embeds),
// and adding that Entry to shell/models.Providers.
//
// Models builds the providers alone (no tool, no MCP server); with
// BuildOptions.Render they only render requests and read no API key.
// RenderStep uses it to render what the model received at a recorded step
// (shell.RenderModelCall), with the agent the run followed at that step.
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
// # Switching tools off
//
// enabled = false in a [[tools]] table switches its tools off, and in an
// [[mcp]] table its server (not started): without deleting the table. A
// tool that is off is not declared to the model (the core then refuses a
// call of it as an unknown tool) and not runnable. The table is still
// read, so an unknown key or a value of the wrong type in it is an error,
// but it is not built: options that would make an enabled tool unusable
// here (a missing root, a missing base_url) are not checked. Its name is
// free for another table. tools_enabled = false at the top switches every
// tool off: every [[tools]] and [[mcp]] table, and the memory tools
// ([memory] tools; recall, which is not a tool, stays as configured).
//
// # Built-in tools' arguments
//
// run_code takes language (python3, bash, node, or python and javascript
// for python3 and node; languages may use either name), code, and an
// optional timeout in whole seconds, from 1 to the table's timeout (10s by
// default, rounded down, at least 1). The schema states the bound, so the
// core refuses a larger value with a correction naming it; a call without
// one gets the table's timeout. web_search takes query and num_results
// (default 5, at most max_results of its table), also accepted as
// max_results; a call giving both with different values is an error
// naming both. generate_image takes prompt, width and height (64 to 4096,
// 1024 by default), and steps and guidance_scale, sent only when given;
// its table gives base_url (an OpenAI-compatible server, ending in /v1),
// api_key_env (OPENAI_API_KEY by default), model (gpt-image-1) and
// timeout. system_stats takes nothing; path, when given, is the directory
// whose disk it measures (/ by default).
//
// # Views
//
// view = [...] in a command tool's table hands the tool part of its run
// with each call, as JSON in a file whose path is in the environment
// variable STEPWISE_VIEW (readable by the tool only, removed when it ends;
// standard input stays the stdin template). The fields are run_id, step
// (the step whose request made the call), agent, tools_used (in first-use
// order) and messages:N (the last N messages of the conversation, N from
// 1 to 1000; each {"role", "content", "calls", "call_id", "name",
// "is_error"}); only the listed ones are in the file:
//
//	{"run_id": "r2026…", "step": 3, "tools_used": ["search"], "messages": [{"role": "user", "content": "…"}]}
//
// The view comes from the run's state, where every secret is already a
// "[redacted:NAME]" marker, so it holds no secret. (A Go tool declares its
// view with shell.ToolSettings.View and reads it from
// shell.RunContextFrom.)
//
// # Output schemas
//
// output_schema in a command tool's table (a JSON Schema, as JSON text or
// a table, like parameters) is what the tool's output must be: JSON that
// fits it, checked with the same validator as arguments (exact types, no
// coercion). An output that is not JSON or does not fit becomes the
// tool's error, naming every mismatch by its path (field "items[2].id":
// expected an integer, found the string "7"), and the model reads it like
// any tool error. A failed call is not checked.
//
// # Caching
//
// cache in the table of idempotent tools (a command tool with idempotent =
// true, web_search, http_get, read_file, list_files, sql_query) lets the
// shell answer a call with an earlier result of the same tool for the same
// arguments (canonical JSON), instead of running it again. cache = "run"
// reuses results within a run, also after the run paused or was resumed;
// cache = "1h" (any positive duration) reuses them across runs of the agent
// (by its name) for that long, kept in the run store (SQLite or
// PostgreSQL) under a digest of agent, tool, the tool's table and
// arguments: a change of the table (its command, env, declaration, a
// built-in's options; not the ttl) starts afresh, while a change the table
// does not show (inside the script a command runs) keeps the old results
// until they expire. Only successful results are cached, as the run recorded them (secrets
// redacted). A result from the cache is recorded in the run like any
// other, marked cached (`stepwise show` tells), so a replay is exact. A
// tool that is not idempotent cannot be cached, nor can an external one,
// nor write_file (a cached call would not write; so not the files group).
//
// # Rates
//
// rate = "30/min" (N/s, N/min or N/h) in a tool table bounds how often its
// tools run: at most N calls in any such window, counted across every run
// of the agent in this process (an API's quota is the process's). A call
// past it waits for its slot instead of failing; the wait shows in the
// CLI's progress ("rate") and changes nothing stored, so a replay neither
// waits nor differs. The wait comes before the call's timeout starts. An
// external tool takes no rate (the caller runs it).
//
// # Result summaries
//
// [summary] (every tool) and a tool table's summary key (that table's
// tools; it replaces [summary] for them) shorten what the model reads of
// a result that is list-like JSON (an array, or an object with an array
// among its members): items is how many items it reads, from the first (0:
// all), item_chars cuts each item to that many characters (0: not cut),
// and max_bytes caps the whole text, hard (0: the tool's byte cap,
// max_result_bytes or [limits] tool_result_bytes). label = "Web search
// results" writes a list on one line, "Web search results: a | b | c", an
// object item as its members' values joined by " - " (the strict JSON
// loop's form); a tool may declare its own label (web_search does), which
// applies when its summary names none. A result that is not
// list-like JSON is cut to max_bytes. With the strict format the model
// reads each summarized result as "Tool N [name]: summary". Left out (or
// all zero), results are only cut to their byte cap, as before. The run's
// store keeps every full result; the model, and the run's state, hold the
// summary (see core.Summary).
//
// # Schema defaults
//
// A default in a tool's schema that does not fit its own schema (a "false"
// for a boolean, a null for a string) is ignored: it is never injected
// into a call and the tool docs leave it out. `stepwise validate` prints a
// warning naming it.
//
// # MCP servers
//
// Each [[mcp]] table is one Model Context Protocol server whose tools the
// model may call, as NAME__TOOL:
//
//	[[mcp]]
//	name = "fs"                  # letters, digits, '-', '_'; prefixes its tools
//	command = "npx"              # stdio: command, args, env (values may say ${VAR})
//	args = ["-y", "@modelcontextprotocol/server-filesystem", "/data"]
//	# url = "https://mcp.example.com/mcp" and headers = { Authorization = "Bearer ${TOKEN}" }
//	allow = ["read_file"]        # or deny = [...]; neither exposes every tool
//	timeout = "20s"              # one call (default 30s)
//	cancel_grace = "5s"          # see Timeouts (default 5s)
//	idempotent = true            # its tools may run again after a crash
//	roots = ["./data"]           # see Roots
//	required = false             # see Unavailable servers (default true)
//	max_attachment_bytes = 1048576   # see Attachments (default 1 MiB)
//
// The tool list a run saw is recorded with the run; resume and replay use
// it, not what the server lists later. When a server says its tool list
// changed (notifications/tools/list_changed), it is listed again and the
// run goes on with the new list from its next step, the change recorded
// with the run like an agent change (resume --agent), so replay follows it.
// (With a text format the tool documentation in the system prompt stays as
// the run started; native tools are sent with every model call.)
//
// Timeouts: a call that runs past timeout is cancelled
// (notifications/cancelled); the server keeps running, and its state, if
// it answers a ping within cancel_grace. One that does not is stopped and
// started again for the next call (at most twice over the run; then its
// calls fail at once).
//
// Roots: the roots capability is declared only when roots are set: paths
// (relative to this file) or file:// URIs, offered to the server as the
// places it may work in.
//
// Unavailable servers: by default a server that cannot start fails the
// run before it begins, and one that dies with no restarts left fails each
// later call (an idempotent tool's call stalls the run when its retries
// run out). With required = false, such a server is unavailable instead:
// its tools are withdrawn (recorded with the run, like a tool-list change)
// and the model is told: a note after the system prompt when the server is
// missing from the start, the error of the call that found it gone
// otherwise.
//
// Progress: a call's notifications/progress are shown on stderr as
// "tool NAME: 40% — message" (not with --quiet); they are not stored.
//
// Structured output: a tool that declares an output schema must return
// structured content that fits it, or the call fails with an error saying
// why. The model reads the tool's text; a result with no text is read as
// its structured content in JSON.
//
// # Attachments
//
// Images and sounds a tool returns (MCP image and audio content, at most
// max_attachment_bytes each) are kept with the call's result. A model whose
// table says accepts = ["image"] (and/or "audio") receives them; any other
// model reads the placeholder in the tool's output ("[image/png content,
// 67 bytes]"), as it would without the key. A larger one is only described,
// with its size.
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
// # Conversations
//
// A run is a conversation (ADR 0032). A user turn begins with a user
// message (the run's input, or a message sent with stepwise say, POST
// /v1/runs/{id}/messages or Runner.Say) and ends when the run answers it:
// the run is then completed, and the user's next message goes on with the
// same run, its messages, memory, tools used and sources. A failed or
// cancelled run has ended for good; stepwise cancel on a completed run
// closes its conversation (it ends cancelled, its last answer kept).
//
// Limits count per user turn: max_steps, max_turns, the corrections and
// escalations in a row, max_repeats and cycle detection start again with
// each user message. max_state_bytes bounds the whole conversation: a
// message it has no room for is refused, the run unchanged. [budget]
// counts the whole conversation unless per = "turn":
//
//	[budget]
//	max_tool_calls = 20
//	per = "turn"                 # or "conversation", the default
//
// A message sent while the run works is stored at once and taken in as a
// step of its own, never lost, never reordered. [conversation] on_message
// says what it does:
//
//	[conversation]
//	on_message = "queue"         # the default: given to the model before its next call
//	max_message_bytes = 262144   # the default (256 KiB); a larger message is refused
//
// With on_message = "interrupt", a message that comes while the turn
// waits on tool calls (running, or paused for external results) ends the
// turn at the next step: the calls not run yet get an error result saying
// why, and the model answers the new message.
//
// A tool table may say ends_turn = true (a transfer to a human, a final
// submission): once a call of its tools has run and succeeded, the turn
// completes with the call's result as the answer, with no further model
// call. A failed call goes back to the model as any failure does.
//
// # Structured output
//
// [output] schema makes the final answer a JSON value that fits a JSON
// Schema (JSON text or a table, like a tool's parameters): checked by the
// core, sent back once (max_corrections, 0 for none) when it does not fit,
// then the run fails with invalid_output. stepwise run --json and GET
// /v1/runs/{id} give it as "output"; from Go, shell.OutputAs[T]. An
// OpenAI-compatible, Responses or Anthropic model is asked for it natively
// when the schema's root is an object (ADR 0034).
//
//	[output]
//	schema = '''{"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}'''
//
// # Sub-agents
//
// [[agents]] makes another agent file a tool: a call of it starts a child
// run of that agent (id: the parent's id, a dot, the call's id), whose
// answer, or output, is the call's result and whose failure is the call's
// error (ADR 0034). Without parameters the tool takes a task, the child's
// input; with them, the arguments' JSON is. A child's pause for external
// tools pauses the root, its calls named "CALL/CHILDCALL"; answer them
// through the root. Budgets span the tree; cancelling the root cancels it;
// sub-agents nest at most 3 deep.
//
// With mode = "handoff" the tool hands the conversation over instead: the
// same run goes on with the other agent (its prompt, read by the model in
// the call's result, and its tools), recorded as an agent change that
// replay follows; the other agent may hand back with a handoff of its own.
// A handoff takes an optional reason and no other parameters.
//
//	[[agents]]
//	name = "research"
//	file = "researcher.toml"
//	description = "Research a product question."
//
// # Context compaction
//
// A request to the primary model is held to a bound of tokens (ADR 0033):
// [context] max_tokens, or max_fraction (0.8 by default) of the model's
// context window, which is [models.primary] context_window or, for a
// well-known model (gpt-4o, gpt-4.1, o3, claude-*, ...), known. A known
// window turns compaction on without a [context] table; enabled = false
// turns it off. Tokens are estimated as bytes / 4 (bytes / 3 for
// Anthropic), or from what the provider reported for the last call.
//
//	[models.primary]
//	context_window = 32768
//	[context]
//	max_fraction = 0.75
//	keep_turns = 4               # model turns kept verbatim (default 4)
//	strategies = ["elide_results", "summarize"]   # the default order
//	summarizer = "helper"        # default: the helper if there is one, else the primary
//	summary_words = 400
//
// The store keeps every message; the model is sent the system prompt, the
// first user message, a summary of what was compacted, the message of the
// user turn in progress and the last model turns. Old tool results are
// elided first (the call stays, with a marker); a summary is a model call
// of its own, recorded as a step (stepwise show marks it "compact").
// stepwise show RUN --step N --request prints what the model was sent. A
// provider that refuses a request as too long triggers one compaction and
// one retry instead of failing the run.
//
// A run may start from an OpenAI-format message history instead of an
// input (stepwise run --messages FILE, POST /v1/runs with messages): a
// system message may come first (it replaces the agent's prompt; a text
// format's tool documentation still follows it); user, assistant (with
// tool_calls) and tool messages follow, every call answered by a tool
// message right after its assistant message, and the history ends with a
// user message or tool results. Anything else is refused with a clear
// error. Recall ([memory] recall) does not run for a history.
//
// Cycle detection, beyond max_repeats (which stops the same call made
// again and again), is on by default: a block of 2 to max_period calls
// (default 4) seen repeats times in a row, and no_progress calls in a row
// (default 6; 0 turns it off) each returning exactly what an identical
// earlier call returned. The first detection tells the model (the calls
// that close a cycle are not run); the next one fails the run with cycle.
// Without a [cycles] table repeats is 3 (left, right three times is a
// cycle; calls with other arguments never are); a [cycles] table sets its
// keys (repeats 2 when it leaves it out), and [cycles] enabled = false
// turns detection off.
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
