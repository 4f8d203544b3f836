// Package codec is what the stores of this module (store/sqlite,
// store/postgres) share below SQL, so that a run is stored, checked and
// exported the same way by either:
//
//   - row.go, step.go, record.go: a step row (one body holding the step's
//     action, result, state head and new messages, compressed when that
//     pays), built from a checkpoint and decoded back into a StepRecord;
//   - segment.go: segments, the copies of a run's messages every
//     SegmentSteps steps that let a state be loaded from N/SegmentSteps
//     segments and fewer than SegmentSteps rows;
//   - checksum.go: the CRC-32C checksums every record carries, with the
//     run's key;
//   - messages.go, wellformed.go: the canonical CBOR of messages, and the
//     checks that what is stored will decode;
//   - tools.go, toolcache.go: tool lists stored by digest, and the tool
//     cache's rows;
//   - blobs.go: what every run of an agent repeats (its config, its
//     instructions as the first message) stored once by digest;
//   - cache.go: what a store remembers of the runs it writes (their tails
//     and open segments), so that a checkpoint reads nothing back;
//   - logcache.go: what a store remembers of the runs it loads (their
//     decoded message logs, within a byte budget), so that loading a run
//     again decodes only what was appended since;
//   - export.go: the portable run file.
//
// A backend does the SQL, in its own transactions, and hands the rows it
// read to these functions, which verify them (store.ErrCorrupt, naming the
// run and step) before using them.
package codec
