package codec

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/stepwise-agent/stepwise/store"
)

// A step row holds the step's scalars (seq, when it was stored, how many
// messages its state holds and the checksum of the last one) and one body:
// the step's action, the result that led to it, its state's head and the
// messages it appended, each as core's CBOR, plus the digest of the
// action's tool list when that list is stored by reference (ToolLists).
//
// The body is the parts one after the other, then a trailer of their
// lengths (uvarints) and the trailer's own length (one byte), then a format
// byte: formatPlain, or formatS2 when the whole is compressed with S2
// (github.com/klauspost/compress/s2), which a step row is whenever that
// saves at least minSaving bytes: a tool's output and the tool message
// that carries it compress against each other. Everything is at the end,
// so a body is built in one buffer without moving its parts.
const (
	formatPlain byte = 1
	formatS2    byte = 2
	// minSaving is the least compression must save to be used.
	minSaving = 16
	// DigestSize is the size of a tool list's digest (SHA-256).
	DigestSize = 32
)

// Row is a step row as every store keeps it.
type Row struct {
	Seq      int
	Created  int64 // ns since the epoch, UTC
	MsgCount int
	MsgSum   int64
	// Body is the stored body; Sum its checksum with the scalars (StepSum).
	Body []byte
	Sum  int64

	// The parts of Body (Build sets them, Open decodes them).
	Action []byte // nil at step 0
	Result []byte // nil when none
	Head   []byte
	Msgs   []byte // the messages the step appended; nil when none
	// Tools is the digest of the action's tool list, stored by reference;
	// nil when the action carries none.
	Tools []byte
	// NewTools, set by Build, is the encoding of that tool list when the
	// store is not known to hold it yet: the backend stores it (keyed by
	// Tools) in the row's transaction, then calls ToolLists.Stored.
	NewTools []byte
	// Blob, set by Initial, is the digest of the run's first message when
	// step 0's row refers to it (see Blobs), and NewBlob its encoding when
	// the store is not known to hold it yet: the backend stores it (keyed
	// by Blob) in the row's transaction, then calls Blobs.Stored.
	Blob, NewBlob []byte
	// Buf is the buffer Build encoded into, for the caller to reuse.
	Buf []byte
}

// seal appends the trailer and the format byte to payload (the parts, in
// buf from start) and compresses it when that pays, using spare for the
// compressed copy. It sets r.Body, and slices the parts out of payload.
func (r *Row) seal(buf []byte, start int, spare []byte) ([]byte, []byte) {
	var t [5 * binary.MaxVarintLen64]byte
	n := 0
	n += binary.PutUvarint(t[n:], optLen(r.Action))
	n += binary.PutUvarint(t[n:], optLen(r.Result))
	n += binary.PutUvarint(t[n:], uint64(len(r.Head)))
	n += binary.PutUvarint(t[n:], optLen(r.Msgs))
	n += binary.PutUvarint(t[n:], uint64(len(r.Tools)))
	buf = append(buf, t[:n]...)
	buf = append(buf, byte(n))
	payload := buf[start:]
	if len(payload) > 2*minSaving {
		need := s2.MaxEncodedLen(len(payload)) + 1
		if cap(spare) < need {
			spare = make([]byte, 0, need)
		}
		c := s2.Encode(spare[:need], payload)
		if len(c)+minSaving <= len(payload) {
			r.Body = append(c, formatS2)
			return buf, spare
		}
	}
	buf = append(buf, formatPlain)
	r.Body = buf[start:]
	return buf, spare
}

func optLen(b []byte) uint64 {
	if b == nil {
		return 0
	}
	return uint64(len(b)) + 1
}

// errBody reports a body that does not parse.
var errBody = errors.New("malformed step body")

// Open decodes r.Body into r's parts. The parts share memory with Body
// (plain) or with one new buffer (compressed).
func (r *Row) Open() error {
	b := r.Body
	if len(b) < 2 {
		return errBody
	}
	format := b[len(b)-1]
	payload := b[:len(b)-1]
	switch format {
	case formatPlain:
	case formatS2:
		n, err := s2.DecodedLen(payload)
		if err != nil || n > maxBody {
			return fmt.Errorf("%w: %v", errBody, err)
		}
		if payload, err = s2.Decode(make([]byte, n), payload); err != nil {
			return fmt.Errorf("%w: %v", errBody, err)
		}
	default:
		return fmt.Errorf("%w: format %d", errBody, format)
	}
	tn := int(payload[len(payload)-1])
	if tn >= len(payload) {
		return errBody
	}
	trailer := payload[len(payload)-1-tn : len(payload)-1]
	var lens [5]uint64
	for i := range lens {
		v, k := binary.Uvarint(trailer)
		if k <= 0 {
			return errBody
		}
		lens[i], trailer = v, trailer[k:]
	}
	if len(trailer) != 0 {
		return errBody
	}
	parts := payload[:len(payload)-1-tn]
	take := func(n uint64, opt bool) ([]byte, bool) {
		if opt {
			if n == 0 {
				return nil, true
			}
			n--
		}
		if n > uint64(len(parts)) {
			return nil, false
		}
		p := parts[:n:n]
		parts = parts[n:]
		return p, true
	}
	var ok [5]bool
	r.Action, ok[0] = take(lens[0], true)
	r.Result, ok[1] = take(lens[1], true)
	r.Head, ok[2] = take(lens[2], false)
	r.Msgs, ok[3] = take(lens[3], true)
	r.Tools, ok[4] = take(lens[4], false)
	if ok != [5]bool{true, true, true, true, true} || len(parts) != 0 || (len(r.Tools) != 0 && len(r.Tools) != DigestSize) {
		return errBody
	}
	if len(r.Tools) == 0 {
		r.Tools = nil
	}
	return nil
}

// maxBody bounds a decompressed body (a state is bounded far below it).
const maxBody = 1 << 30

// Verify checks r's checksum as a row of run rk.
func (r *Row) Verify(runID string, rk int64) error {
	if StepSum(rk, r) != r.Sum {
		return fmt.Errorf("%w: run %s step %d: the step record fails its checksum", store.ErrCorrupt, runID, r.Seq)
	}
	return nil
}

// Seal sets r's body from its parts (Action, Result, Head, Msgs, Tools),
// as Build does: for rows built from other parts (an import, a migration).
func (r *Row) Seal() {
	var buf []byte
	for _, p := range [][]byte{r.Action, r.Result, r.Head, r.Msgs, r.Tools} {
		buf = append(buf, p...)
	}
	action, result, head, msgs, tools := r.Action, r.Result, r.Head, r.Msgs, r.Tools
	r.seal(buf, 0, nil)
	r.Action, r.Result, r.Head, r.Msgs, r.Tools = action, result, head, msgs, tools
}
