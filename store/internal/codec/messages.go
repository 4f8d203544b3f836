package codec

import (
	"fmt"
	"unicode/utf8"

	"github.com/stepwise-agent/stepwise/core"
)

// Messages are stored one CBOR item each, in the same encoding core uses
// for states (Core Deterministic Encoding), concatenated per step. The
// decoder has a fast path for the canonical shape of a core.Message that
// slices strings out of one copy of the chunk instead of allocating each; any
// other shape goes through the general decoder with core's strict options.

// msgEnc and msgDec are the core's own modes, so the store's bytes for a
// message are the core's bytes for it inside a state.
var msgEnc, msgDec = core.CBORModes()

// EncodeMessages appends the encoding of msgs to dst and returns it with the
// checksum of the last message's encoding (for the append-only check).
func EncodeMessages(dst []byte, msgs []core.Message) ([]byte, int64) {
	var last int64
	for i := range msgs {
		start := len(dst)
		dst = core.AppendMessage(dst, msgs[i])
		last = MessageSum(dst[start:])
	}
	return dst, last
}

// DecodeMessages decodes the messages of body, appending them to dst: n of
// them, or all of them when n < 0. With n >= 0 and rest false, body must hold
// exactly n; with rest true it may go on (a prefix is decoded). With ends
// non-nil, it also appends the end offset of each message in body.
func DecodeMessages(body []byte, n int, rest bool, dst []core.Message, ends *[]int) ([]core.Message, error) {
	d := msgDecoder{b: body, s: string(body)}
	for i := 0; n < 0 && d.off < len(body) || i < n; i++ {
		start := d.off
		dst = append(dst, core.Message{})
		m := &dst[len(dst)-1]
		if !d.message(m) {
			*m = core.Message{}
			r, err := msgDec.UnmarshalFirst(body[start:], m)
			if err != nil {
				return dst, fmt.Errorf("%w: message %d: %v", core.ErrCorrupt, i, err)
			}
			d.off = len(body) - len(r)
		}
		if ends != nil {
			*ends = append(*ends, d.off)
		}
	}
	if !rest && d.off != len(body) {
		return dst, fmt.Errorf("%w: %d bytes after %d messages", core.ErrCorrupt, len(body)-d.off, n)
	}
	return dst, nil
}

// msgDecoder reads canonical CBOR of core.Message. Its methods report false
// for anything outside the canonical shape; the caller then falls back to the
// general decoder, which decodes it or says why it cannot.
type msgDecoder struct {
	b   []byte
	s   string // the same bytes, so strings are slices of one copy
	off int
}

// head reads an item's initial byte and argument, requiring the shortest form.
func (d *msgDecoder) head() (major byte, arg uint64, ok bool) {
	if d.off >= len(d.b) {
		return 0, 0, false
	}
	c := d.b[d.off]
	major, info := c>>5, c&0x1f
	d.off++
	switch {
	case info < 24:
		return major, uint64(info), true
	case info == 24:
		if d.off+1 > len(d.b) || d.b[d.off] < 24 {
			return 0, 0, false
		}
		arg = uint64(d.b[d.off])
		d.off++
	case info == 25:
		if d.off+2 > len(d.b) {
			return 0, 0, false
		}
		arg = uint64(d.b[d.off])<<8 | uint64(d.b[d.off+1])
		d.off += 2
		if arg <= 0xff {
			return 0, 0, false
		}
	case info == 26:
		if d.off+4 > len(d.b) {
			return 0, 0, false
		}
		arg = uint64(d.b[d.off])<<24 | uint64(d.b[d.off+1])<<16 | uint64(d.b[d.off+2])<<8 | uint64(d.b[d.off+3])
		d.off += 4
		if arg <= 0xffff {
			return 0, 0, false
		}
	default: // 8-byte lengths, reserved values and indefinite lengths
		return 0, 0, false
	}
	return major, arg, true
}

// span reads a definite string of the given major type and returns its
// bounds.
func (d *msgDecoder) span(major byte) (start, end int, ok bool) {
	m, n, ok := d.head()
	if !ok || m != major || n > uint64(len(d.b)-d.off) {
		return 0, 0, false
	}
	start, end = d.off, d.off+int(n)
	d.off = end
	return start, end, true
}

func (d *msgDecoder) text(dst *string) bool {
	start, end, ok := d.span(3)
	if !ok || !utf8.ValidString(d.s[start:end]) {
		return false
	}
	*dst = d.s[start:end]
	return true
}

// mapHead reads a map header of at most max pairs.
func (d *msgDecoder) mapHead(max uint64) (uint64, bool) {
	m, n, ok := d.head()
	return n, ok && m == 5 && n <= max
}

// key reads a map key: a small integer above prev and at most max.
func (d *msgDecoder) key(prev, max uint64) (uint64, bool) {
	m, k, ok := d.head()
	return k, ok && m == 0 && k > prev && k <= max
}

func (d *msgDecoder) message(m *core.Message) bool {
	n, ok := d.mapHead(6)
	var k uint64
	for i := uint64(0); ok && i < n; i++ {
		if k, ok = d.key(k, 6); !ok {
			return false
		}
		switch k {
		case 1:
			var s string
			ok = d.text(&s)
			m.Role = core.Role(s)
		case 2:
			ok = d.text(&m.Content)
		case 3:
			ok = d.calls(m)
		case 4:
			ok = d.text(&m.CallID)
		case 5:
			ok = d.text(&m.Name)
		case 6:
			// Canonical with omitempty: only true is ever written.
			if ok = d.off < len(d.b) && d.b[d.off] == 0xf5; ok {
				m.IsError = true
				d.off++
			}
		}
	}
	return ok
}

func (d *msgDecoder) calls(m *core.Message) bool {
	major, n, ok := d.head()
	if !ok || major != 4 || n > uint64(len(d.b)-d.off) {
		return false
	}
	m.Calls = make([]core.ToolCall, n)
	for i := range m.Calls {
		c := &m.Calls[i]
		fields, ok := d.mapHead(3)
		var k uint64
		for j := uint64(0); ok && j < fields; j++ {
			if k, ok = d.key(k, 3); !ok {
				return false
			}
			switch k {
			case 1:
				ok = d.text(&c.ID)
			case 2:
				ok = d.text(&c.Name)
			case 3:
				var start, end int
				start, end, ok = d.span(2)
				c.Args = d.b[start:end:end]
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
