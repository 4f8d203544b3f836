package codec

import (
	"errors"
	"unicode/utf8"
)

// CheckCBOR reports whether b is exactly one well-formed CBOR item of
// definite lengths whose text strings are valid UTF-8: what core's strict
// decoder needs before it looks at the fields. It is the cheap write-time
// guard of Checkpoint (a full decode costs ten times more).
func CheckCBOR(b []byte) error {
	end, err := skipCBOR(b, 0, 0)
	if err != nil {
		return err
	}
	if end != len(b) {
		return errors.New("cbor: bytes after the item")
	}
	return nil
}

// CheckCBORSeq is CheckCBOR for n items one after the other.
func CheckCBORSeq(b []byte, n int) error {
	off := 0
	for i := 0; i < n; i++ {
		var err error
		if off, err = skipCBOR(b, off, 0); err != nil {
			return err
		}
	}
	if off != len(b) {
		return errors.New("cbor: bytes after the items")
	}
	return nil
}

var errCBOR = errors.New("cbor: malformed")

func skipCBOR(b []byte, off, depth int) (int, error) {
	if depth > 64 {
		return 0, errors.New("cbor: nested too deeply")
	}
	if off >= len(b) {
		return 0, errCBOR
	}
	major, info := b[off]>>5, b[off]&0x1f
	off++
	var arg uint64
	switch {
	case info < 24:
		arg = uint64(info)
	case info <= 27:
		n := 1 << (info - 24)
		if off+n > len(b) {
			return 0, errCBOR
		}
		for _, c := range b[off : off+n] {
			arg = arg<<8 | uint64(c)
		}
		off += n
	default: // reserved, or indefinite length
		return 0, errCBOR
	}
	switch major {
	case 0, 1: // integers: the head is all
		return off, nil
	case 7: // simple values and floats; a one-byte simple value is 32 or more
		if info == 24 && arg < 32 {
			return 0, errCBOR
		}
		return off, nil
	case 2, 3:
		if arg > uint64(len(b)-off) {
			return 0, errCBOR
		}
		end := off + int(arg)
		if major == 3 && !validText(b[off:end]) {
			return 0, errors.New("cbor: text is not valid UTF-8")
		}
		return end, nil
	case 4, 5:
		items := arg
		if major == 5 {
			items *= 2
		}
		if arg > uint64(len(b)-off) { // each item takes at least a byte
			return 0, errCBOR
		}
		var err error
		for i := uint64(0); i < items; i++ {
			if off, err = skipCBOR(b, off, depth+1); err != nil {
				return 0, err
			}
		}
		return off, nil
	default: // 6: a tag and its item
		return skipCBOR(b, off, depth+1)
	}
}

// validText is utf8.Valid, with the ASCII text core mostly writes checked
// in line: the texts are short, and the call costs more than the bytes.
func validText(p []byte) bool {
	for i, c := range p {
		if c >= utf8.RuneSelf {
			return utf8.Valid(p[i:])
		}
	}
	return true
}
