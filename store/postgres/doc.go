// Package postgres is the PostgreSQL store (github.com/jackc/pgx/v5,
// pgxpool): store.Store with the observable behaviour of store/sqlite, the
// reference, for a service whose servers share their runs through one
// database. It needs no cgo.
//
// The backend-neutral parts are store/internal/codec's, shared with SQLite:
// step rows (one body, compressed when that pays), segments, checksums
// (CRC-32C with the run's key), tool lists by digest, the cache of runs'
// tails and open segments, the cache of decoded message logs, and the
// export format. The same run therefore
// exports to the same bytes from either store, and a file exported by one
// imports into the other.
//
// # Schema
//
// Migrations are embedded (migrations/*.sql), applied at Open in order, each
// in its own transaction with its row in schema_migrations; concurrent
// openers serialize on a transaction-scoped advisory lock (per schema). A
// database at a newer version than this build knows is refused with
// store.ErrNewerSchema. Options.Schema puts the store in a schema of its own
// (created if needed, set as every connection's search_path).
//
//	runs           rk (bigint identity), id (unique, byte order), agent, config, input,
//	               status (CHECK: the 7 statuses), times (ns), answer, fail_code, reason,
//	               parent, retry_ns, stall_attempts, lease_owner, lease_token,
//	               lease_expires_ns (by the server's clock: expiry is judged in
//	               SQL, never by a client's), cancel_reason, takeovers (forced
//	               take-overs, a line each), turns (RunInfo.Turns), inbox_n
//	               (the last number given to a posted message)
//	steps          (rk, seq) primary key, created_ns, msg_count, msg_sum, body, sum
//	segments       (rk, seq_from) primary key, seq_to, first, n, body, sum
//	intents        ord (identity: recorded order), rk, seq, call_id, tool, args,
//	               started_ns, result, completed_ns, sum; unique (rk, seq, call_id)
//	agent_changes  ord, rk, seq, created_ns, config, sum
//	inbox          (rk, n) primary key, content, posted_ns, sum: the user
//	               messages posted to a run (PostMessage) and not folded in
//	tool_lists     digest (SHA-256) primary key, body
//	blobs          digest (SHA-256) primary key, body: what every run of an agent
//	               repeats, stored once (ADR 0035): a config whose runs or
//	               agent_changes row has config_ref (and an empty config), and a
//	               run's first message when it is the agent's instructions
//	               (step 0's row refers to it; store/internal/codec/blobs.go)
//	mem_*          entities (with their full-text fields), observations, relations,
//	               and the totals BM25 needs
//
// Times are bigint nanoseconds (UTC). Text that comes from models, tools or
// callers (a run's input, answer and reason, intents' call ids and tools,
// memory) is stored as bytea, since PostgreSQL's text cannot hold NUL or
// invalid UTF-8 and SQLite stores them as given.
//
// A run's creation is one statement, in autocommit (one round trip): the
// run's row and step 0, whose checksum covers the run's key, under a key
// the store took from the runs' sequence beforehand (rkBlock at a time).
// One that stores a config's or a first message's body for the first time,
// or a fork (its parent is checked), is one transaction of three round
// trips: its BEGIN with the run's insert (the body, the parent's check),
// then step 0, then the commit.
//
// # Writes and fencing
//
// Every write that belongs to driving a run is conditional on the run's
// lease (its token and holder) in the same statement or transaction, and a
// holder that lost its lease writes nothing (store.ErrLeaseLost):
//
//   - The step insert is INSERT INTO steps ... SELECT ... FROM runs WHERE
//     rk = $ AND lease_token = $ AND lease_owner = $ FOR SHARE, checked by
//     its count of inserted rows. FOR SHARE is what makes it a fence under
//     READ COMMITTED: Acquire, Claim and Release write the run's row, and
//     Acquire reads it FOR UPDATE, so an insert that saw the old lease
//     commits before the new holder reads the run back, or sees the new
//     lease and inserts nothing. Without it, an insert that checked the
//     token just before a take-over could commit just after it
//     (storetest's FenceHoldsAgainstAcquire fails that way). The primary key
//     (rk, seq) is the last fence: a second writer's step is store.ErrSeq.
//   - The common checkpoint (the run's tail known from the store's cache,
//     the status unchanged, no segment to close, no new tool list, no
//     user message) is that
//     one statement in autocommit: one round trip. The common checkpoints
//     of other runs that arrive while one is in flight go together, as one
//     statement over arrays (unnest) with the same lease condition for
//     each row and ON CONFLICT DO NOTHING, one commit for all (batch.go,
//     docs/adr/0038-postgres-step-batches.md); a step it did not insert
//     is sent again alone, whose outcome is the step's. Any other checkpoint is
//     one pipelined batch (one round trip, one implicit transaction): the
//     step, then the run's status, the closed segment and a new tool list,
//     each conditional on the same lease, so all of them write or none
//     does. A checkpoint whose tail this store does not know first reads
//     it, with the lease, in one round trip (and with it, when the step
//     closes a segment that is not in memory, the steps to build it from).
//   - A checkpoint that delivers an inbox message (Checkpoint.Delivered)
//     sends the same statements with BEGIN, and a DELETE of the message
//     that must remove the oldest waiting, and commits (a second round
//     trip) only when the step and the delivery both wrote. One whose
//     result is a core.UserMessage also counts a turn in the run's row;
//     one that completes the run sets the status with a CASE over the
//     inbox (running while it holds a message) and reads it back
//     (RETURNING, what CheckpointStatus returns); with Checkpoint.Release,
//     the same UPDATE gives the lease up unless the run stays running.
//     PostMessage reads the run's row FOR UPDATE, so racing
//     posts take the run's counter in turn and a post and a checkpoint
//     serialize: the step insert's FOR SHARE waits for the post, or the
//     post for the checkpoint.
//   - SetStatus, Renew and Release are one conditional UPDATE each. Intents,
//     outcomes and retractions read the run's row FOR SHARE with BEGIN (one
//     round trip), check the lease and the step, and write. ChangeAgent
//     locks the row FOR UPDATE, so no step is appended between reading the
//     last one and recording the change at it. Acquire reads the lease FOR
//     UPDATE, decides with store.LeaseRequest.Takes on the store's clock,
//     and writes the new holder. Claim is one statement that takes the
//     oldest runnable run FOR UPDATE SKIP LOCKED, so racing workers take
//     different runs.
//
// A checkpoint, once begun, runs to its end (for at most 30 s) whatever
// its caller's context does; every other operation honours the context.
// Statements are prepared once per connection (pgx's statement cache), so
// a pooler that does not keep a session per connection (PgBouncer in
// transaction mode) must not stand between the store and the server.
//
// # Reads
//
// LoadLatest and LoadStep read the step's row, then in one round trip the
// segments before its segment and at most 63 step rows: steps and segments
// are never modified, and a segment commits with the step that closes it,
// so no snapshot is needed. The store keeps the decoded message logs of the
// runs it loaded (codec.LogCache, at most Options.LogCacheBytes, 32 MiB by
// default), so that loading a run again reads the bodies only of the
// segments it does not hold (the others' extents and checksums are
// compared with what it holds) and only the step rows after those it
// holds, and decodes only those: a conversation's next load costs the same
// at turn 16 and at turn 100 (docs/performance.md, issue 23). Steps, StepsFrom and Export read from one
// snapshot (a read-only REPEATABLE READ transaction), a page of 256 step
// rows at a time. ListRuns and Run read the last step and the last agent
// change of each run by index (LATERAL); Updated is the later of the run's
// own update and its last step, as in SQLite.
//
// # Clock
//
// Options.Now is the store's clock. By default it is the database server's:
// time.Now plus the offset to the server's clock measured at Open (the best
// of three readings, each taken at the middle of its round trip), so stores
// on hosts whose clocks disagree agree on lease expiries.
//
// # Memory
//
// Memory has SQLite's semantics: entities unique by (namespace, name), with
// ordered, distinct observations; relations stored once; a relation to an
// entity not stored yet creates it bare; traversal breadth first up to a
// depth, relations at each entity by type, then target name (byte order).
// Writers of one namespace serialize on a transaction-scoped advisory lock.
//
// Search is full text over name, type and observations. Words are cut and
// folded in Go (fts.go: letters, numbers and marks; case folded; diacritics
// of Latin letters removed, so "cafe" finds "Café"), close to SQLite FTS4's
// unicode61 tokenizer, and reach PostgreSQL as tsvector and tsquery
// literals (never parsed as text search syntax), one tsvector per field
// with a GIN index each. A query's words are ORed: any one matching is a
// hit. Hits are ranked by Okapi BM25, not ts_rank: computed exactly as the
// SQLite store computes it from FTS4's matchinfo (k1 1.2, b 0.75, field
// weights 3, 1, 1; document frequencies and average field lengths over all
// namespaces, as FTS4 counts them), so the two stores rank the same memory
// the same way with the same scores (storetest.Across, from TestAcrossSQLite).
// Term frequencies are exact up to 256 occurrences of a word among the
// first 16,383 words of a field (PostgreSQL's limits on a tsvector's
// positions); words over 2,046 bytes are not indexed.
package postgres
