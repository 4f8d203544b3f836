// Package tools holds the built-in tools the shell runs itself: run_code,
// read_file, write_file, list_files, http_get, web_search, sql_query,
// generate_image (an OpenAI-compatible images endpoint; the image reaches
// the model as an attachment), system_stats (the host's CPU, memory and
// disk, as key=value percentages), and command tools defined in the agent
// config by an argv template. (The
// memory_* built-ins are not here: the runner maps them to the store.)
//
// Every tool implements shell.Tool. Its Spec carries a strict JSON Schema
// (additionalProperties false, required fields, types) that the core checks
// the model's arguments against before Run is called; Run still decodes the
// arguments defensively.
//
// The contract, common to every tool:
//
//   - Run never returns a Go error. Bad arguments, refused paths or hosts,
//     timeouts, crashes and failed commands come back as core.ToolResult
//     with Error set, in words the model can act on.
//   - Run honours ctx: when it is done the tool stops its work, kills the
//     processes it started (all of them, see below), and returns.
//   - Every tool has its own limits (time, bytes, rows, entries) with
//     defaults; when output is cut the result says how much was left out.
//   - Tools hold configuration, not open files: roots, databases and
//     scratch directories are opened per call and closed (or removed)
//     before Run returns. The HTTP tools keep an idle-connection pool.
//     Every tool is safe for concurrent use.
//
// Processes: run_code and command tools start their program under a
// Supervisor (so do stdio MCP servers, through Supervise). On Linux it is
// this executable started again in supervisor mode, which the init function
// of this package selects: a child subreaper that runs the program without
// the capabilities that read other processes' memory and, when the program
// exits, times out, is cancelled, or this process dies (even by SIGKILL),
// kills every process below it, setsid'ed and double-forked ones included.
// The first program started closes this process's environment and memory
// to them (HideEnvironment), unless the embedding program opted out with
// ExposeEnvironment. Elsewhere the program runs in its own process group,
// which is killed.
//
// A command tool whose call carries a view of its run (shell.RunContext.View,
// declared by the agent) reads it as JSON from the file named by ViewEnv.
//
// Each constructor takes an options struct whose zero values mean the
// documented defaults. Builtin builds a built-in by name from Options, and
// Builtins lists the names it knows.
package tools
