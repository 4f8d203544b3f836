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
//	[models.helper]              # optional: escalation target
//	provider = "script"
//	script = "../scripts/helper.jsonl"   # relative to this file
//
//	[limits]                     # max_steps, max_calls_per_turn, max_repeats, max_corrections,
//	max_steps = 20               # max_escalations, tool_result_bytes, max_state_bytes
//	[policy]                     # parallel, stop_on_error, reject_unknown_args
//	[memory]                     # tools, recall, recall_limit, namespace
//	[run]                        # tool_timeout, run_timeout, max_tool_output
//
//	[[tools]]                    # a built-in tool, with its options
//	builtin = "run_code"
//	languages = ["python3"]
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
//	parameters = '''{"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}'''
//
// parameters may be a JSON string (property order kept, which the helpers
// format uses for positional arguments) or a TOML table (properties sorted).
// Unknown keys, bad values and invalid schemas are errors naming the file,
// line and column.
package agent
