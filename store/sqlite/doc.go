// Package store persists runs: every step of every run, the side-effect
// intents of tool calls, and the agents' long-term memory. SQLite (Open,
// *SQLite) is the implementation; shell.Store is the interface the runner
// uses.
//
// # Contract
//
//   - CreateRun stores a run and its step 0 (the initial state). Checkpoint
//     appends one step in one transaction: the action, the result that led
//     to it and the state (action.Next()), and sets the run's status from the
//     action. A checkpoint is durable when Checkpoint returns: with
//     SyncNormal it survives a crash of the process, with SyncFull also a
//     power loss; with SyncCritical (the default) a run's creation, its
//     intents and outcomes, and every checkpoint that changes its status (a
//     pause, a stall, its end) survive a power loss, and a running run's
//     other steps, leases and cache entries a crash of the process (each
//     synced commit makes those before it durable). A failed checkpoint writes
//     nothing.
//   - A held lease lapses, for this store, once it has watched the lease's
//     heartbeat (lease_beat, moved by every renewal) not move for the
//     holder's TTL (lease_ttl_ns) on its own clock (lease_watch.go); the
//     expiry the holder wrote, by its clock, is only shown.
//   - Steps are append-only and contiguous from 0. The state loaded at any
//     step (LoadStep, LoadLatest, Steps) encodes, with core.EncodeState, to
//     exactly the bytes of the state that was checkpointed; actions and
//     results likewise.
//   - A state's messages must extend those of the run's previous step
//     (core's conversation is append-only); Checkpoint refuses anything else
//     with ErrNotAppend. A fork is a new run (NewRun.ParentID) whose step 0
//     holds the state it starts from.
//   - What a step writes is proportional to what it added (its new
//     messages, its action and result, the small rest of the state), not to
//     the length of the conversation; see docs/adr/0004-store-layout.md.
//   - Every record carries a checksum. A record that fails it, or does not
//     decode, is reported as ErrCorrupt (and core.ErrCorrupt for decoding),
//     naming the run and step; it is never used.
//   - A run is a conversation. PostMessage queues a user message in the
//     run's inbox (table inbox: the run's key, the message's number n,
//     its content, when it was posted and a checksum), numbered from the
//     run's counter (runs.inbox_n) in the one write transaction, so racing
//     posts from any process get different numbers; a post is synced
//     under SyncCritical, and turns a completed run running. A checkpoint
//     with Delivered removes that message in its transaction, and only
//     when it is the oldest waiting (ErrConflict otherwise); one whose
//     result is a core.UserMessage counts a turn (runs.turns); one that
//     completes the run while its inbox holds a message leaves it running
//     (CheckpointStatus says so), and keeps its lease; one that ends the
//     run with Checkpoint.Release gives the lease up in the UPDATE that
//     sets its status. Only these checkpoints read or write the inbox.
//   - RecordIntent is durable before a tool call runs, RecordOutcome after.
//     After a crash, Intents tells the calls of a step that completed (an
//     outcome), that were in flight (an intent only), and, by absence, that
//     never started.
//   - Errors are wrapped with the run, step or namespace they concern; match
//     the sentinels (ErrNotFound, ErrExists, ErrCorrupt, ErrSeq,
//     ErrNotAppend, ErrEnded, ErrConflict, ErrNewerSchema) with errors.Is.
//
// # Concurrency
//
// A *SQLite is safe for concurrent use, and several processes may use one
// database file. The file is in WAL mode: reads never wait for writes and see
// a consistent snapshot (Steps and Export read from one). Writes take the
// write lock up front (BEGIN IMMEDIATE) and wait for it up to
// Options.BusyTimeout, so concurrent writers queue instead of failing. A run
// should have one writer at a time (the runner driving it); Checkpoint's
// sequence check turns a second writer's step into ErrSeq, never into a
// fork of the history.
//
// # Loads
//
// A load reads, from one snapshot, the step's row, the segments before its
// segment and the step rows of its segment before it (at most 63). The
// store keeps the decoded message logs of the runs it loaded
// (codec.LogCache, at most Options.LogCacheBytes, 32 MiB by default, least
// recently loaded runs evicted first), so that loading a run again reads
// the bodies only of the segments it does not hold (the others' extents
// and checksums are compared with what it holds, and any difference drops
// what it holds and reads everything) and only the step rows after those it
// holds, and decodes only those. The states it returns share the run's log:
// their messages are read-only (appending copies them). A segment or a row
// of the open segment whose bytes change on disk under an unchanged
// checksum after this store read them is not noticed by its loads while it
// holds them; Steps, Export and other processes read and verify everything.
//
// # Schema
//
// Migrations are embedded (migrations/*.sql), applied in order at Open, each
// in its own transaction together with its row in schema_migrations. A
// database at a version newer than this build knows is refused with
// ErrNewerSchema.
//
// # Memory
//
// Memory is a graph per namespace: entities (unique by name) with ordered
// observations, and typed relations. MemoryCreate upserts; a relation to an
// entity not stored yet creates that entity bare. MemorySearch is full-text
// search ranked by BM25 (SQLite FTS4, which go-sqlite3 builds in by default,
// with the BM25 score computed from matchinfo; FTS5 would need every build of
// every user to pass -tags sqlite_fts5). A query is free text: its words are
// searched for, so quotes, operators and wildcards a model writes are never
// syntax. MemoryTraverse walks relations outward, breadth first.
//
// # Export format
//
// Export writes one run as a JSON document, one step per line:
//
//	{"format":"stepwise-run","version":1,
//	"run":{...},
//	"steps":[
//	{...step 0...},
//	{...step 1...}
//	]}
//
// The export is self-contained: what the store keeps once by digest (a
// config, a run's first message: table blobs, ADR 0035) is written out in
// full, and an import stores it once again.
//
// "run" holds id, agent, config_hash, config (the agent config bytes,
// base64), input, status, created and updated (as in RunInfo; RFC 3339, UTC,
// nanoseconds),
// answer, fail_code, reason, parent_id, parent_step and retry_at (when a
// stalled run may be tried again) (each omitted when empty), agent_changes
// (resume --agent), and steps (the number of steps).
//
// Each step holds:
//
//	seq            its sequence number, from 0
//	created        when it was stored
//	describe       {"result", "action", "state"}: core.DescribeResult,
//	               core.DescribeAction and core.DescribeState, for reading
//	result         base64 of core.EncodeResult (absent when none)
//	action         base64 of core.EncodeAction (absent at step 0)
//	state          base64 of core.EncodeState of the state without its
//	               messages (Messages nil)
//	message_count  how many messages the state holds
//	messages       the messages this step appended to the run's log, each
//	               {"cbor": base64 of its CBOR (Core Deterministic
//	               Encoding, as inside a state), "describe":
//	               core.DescribeMessage}
//	intents        the tool-call intents recorded for the step, each
//	               {"call_id", "tool", "args" (base64), "started",
//	               "result" (base64 CBOR of core.ToolResult, when
//	               completed), "completed"}
//	crc32c         CRC-32C (Castagnoli), 8 hex digits, over: seq,
//	               message_count, result, action, state, the number of
//	               messages and each message's cbor, the number of
//	               intents and each intent's call_id, tool, args and
//	               result; integers as 8 bytes little-endian, each byte
//	               string preceded by its length (-1 for an absent one)
//
// The state at step N is the state of step N with the first message_count
// messages of the log (the messages of steps 0..N in order) attached. The
// file is deterministic: exporting a run, importing it elsewhere and
// exporting it again gives the same bytes. Import checks every step
// (checksum, contiguity, that every state, message, action and result
// decodes, that messages are canonical) before it writes anything, and
// refuses a run id already stored (ErrExists; ImportAs stores it under
// another id). A fork's parent need not be in the importing store.
package sqlite
