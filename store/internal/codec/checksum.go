package codec

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Summer computes a record's checksum: CRC-32C over its fields in a fixed
// order, integers as 8 bytes little-endian, byte strings length-prefixed (a
// NULL blob has length -1), so no two different records share an input.
type Summer struct {
	crc uint32
	buf [8]byte
}

// Int adds an integer.
func (h *Summer) Int(v int64) {
	binary.LittleEndian.PutUint64(h.buf[:], uint64(v))
	h.crc = crc32.Update(h.crc, castagnoli, h.buf[:])
}

// Blob adds b, or NULL when b is nil.
func (h *Summer) Blob(b []byte) {
	if b == nil {
		h.Int(-1)
		return
	}
	h.Int(int64(len(b)))
	h.crc = crc32.Update(h.crc, castagnoli, b)
}

// Str adds s.
func (h *Summer) Str(s string) {
	h.Int(int64(len(s)))
	h.crc = crc32.Update(h.crc, castagnoli, []byte(s))
}

// Sum is the checksum so far.
func (h *Summer) Sum() int64 { return int64(h.crc) }

// StepSum is the checksum of a step row of run rk: its scalars and its
// stored body.
func StepSum(rk int64, r *Row) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(r.Seq))
	h.Int(r.Created)
	h.Int(int64(r.MsgCount))
	h.Int(r.MsgSum)
	h.Blob(r.Body)
	return h.Sum()
}

// LegacyStepSum is the checksum of a step row of the first store layout
// (four blobs), kept to verify rows while a database is migrated.
func LegacyStepSum(rk int64, seq int, created int64, msgCount int, msgSum int64, action, result, head, msgs []byte) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(seq))
	h.Int(created)
	h.Int(int64(msgCount))
	h.Int(msgSum)
	h.Blob(action)
	h.Blob(result)
	h.Blob(head)
	h.Blob(msgs)
	return h.Sum()
}

// SegmentSum is the checksum of a segments row.
func SegmentSum(rk int64, seqFrom, seqTo, first, n int, body []byte) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(seqFrom))
	h.Int(int64(seqTo))
	h.Int(int64(first))
	h.Int(int64(n))
	h.Blob(body)
	return h.Sum()
}

// MessageSum identifies one encoded message, for the append-only check.
func MessageSum(enc []byte) int64 {
	return int64(crc32.Checksum(enc, castagnoli))
}

// IntentSum is the checksum of an intents row.
func IntentSum(rk int64, seq int, callID, tool string, args []byte, startedNs int64, result []byte, completedNs int64) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(seq))
	h.Str(callID)
	h.Str(tool)
	h.Blob(args)
	h.Int(startedNs)
	h.Blob(result)
	h.Int(completedNs)
	return h.Sum()
}

// AgentChangeSum is the checksum of an agent_changes row.
func AgentChangeSum(rk int64, seq int, created int64, config []byte) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(seq))
	h.Int(created)
	h.Blob(config)
	return h.Sum()
}

// InboxSum is the checksum of an inbox row: message n of run rk, posted at
// posted (ns).
func InboxSum(rk int64, n int, posted int64, content string) int64 {
	var h Summer
	h.Int(rk)
	h.Int(int64(n))
	h.Int(posted)
	h.Str(content)
	return h.Sum()
}
