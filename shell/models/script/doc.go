// Package script is a model provider that answers from a JSONL file, one
// reply per model call, for offline demos, tests and benchmarks.
//
// Each line that is not blank and does not start with # or // is one reply:
//
//	{"text": "...", "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}],
//	 "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
//
// Every key is optional; an unknown key is an error naming the line. A call's
// "arguments" given as a JSON object is sent as that object's compact JSON
// text; given as a JSON string it is sent verbatim, so a script can hand the
// core malformed arguments; absent, it is "{}". A line {"error": "..."} (with
// no other key) makes that call fail with an ordinary, retryable provider
// error, to simulate a provider outage. "delay_ms" (with any of them) makes
// the call take that long before it answers, as a real model does (at most
// ten minutes; a cancelled call returns at once).
//
// Which reply answers which call is decided by the request alone, never by a
// counter inside the provider: call number ModelRequest.Call (1-based, the
// run's count of model calls, which survives a crash and a resume in a new
// process) gets reply number Call-Offset. Re-asking the same call gets the
// same reply. Primary and helper calls share the numbering, so a provider used
// for one role only still needs a line (any line) for each call of the other.
// A call number with no reply is an error wrapping shell.ErrModelPermanent.
//
// A Provider is immutable and safe for concurrent use.
package script
