package store

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// summer computes a record's checksum: CRC-32C over its fields in a fixed
// order, integers as 8 bytes little-endian, byte strings length-prefixed (a
// NULL blob has length -1), so no two different records share an input.
type summer struct {
	crc uint32
	buf [8]byte
}

func (h *summer) int(v int64) {
	binary.LittleEndian.PutUint64(h.buf[:], uint64(v))
	h.crc = crc32.Update(h.crc, castagnoli, h.buf[:])
}

// blob adds b, or NULL when b is nil.
func (h *summer) blob(b []byte) {
	if b == nil {
		h.int(-1)
		return
	}
	h.int(int64(len(b)))
	h.crc = crc32.Update(h.crc, castagnoli, b)
}

func (h *summer) str(s string) {
	h.int(int64(len(s)))
	h.crc = crc32.Update(h.crc, castagnoli, []byte(s))
}

func (h *summer) sum() int64 { return int64(h.crc) }

func stepSum(rk int64, r *stepRow) int64 {
	var h summer
	h.int(rk)
	h.int(int64(r.seq))
	h.int(r.created)
	h.int(int64(r.msgCount))
	h.int(r.msgSum)
	h.blob(r.action)
	h.blob(r.result)
	h.blob(r.head)
	h.blob(r.msgs)
	return h.sum()
}

func segmentSum(rk int64, seqFrom, seqTo, first, n int, body []byte) int64 {
	var h summer
	h.int(rk)
	h.int(int64(seqFrom))
	h.int(int64(seqTo))
	h.int(int64(first))
	h.int(int64(n))
	h.blob(body)
	return h.sum()
}

// messageSum identifies one encoded message, for the append-only check.
func messageSum(enc []byte) int64 {
	return int64(crc32.Checksum(enc, castagnoli))
}

func intentSum(rk int64, seq int, callID, tool string, args []byte, startedNs int64, result []byte, completedNs int64) int64 {
	var h summer
	h.int(rk)
	h.int(int64(seq))
	h.str(callID)
	h.str(tool)
	h.blob(args)
	h.int(startedNs)
	h.blob(result)
	h.int(completedNs)
	return h.sum()
}
