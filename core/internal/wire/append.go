package wire

import (
	"encoding/binary"
	"math"
)

// The CBOR major types, shifted into the initial byte, and the simple
// values false, true and null.
const (
	MajorUint  byte = 0 << 5
	MajorNeg   byte = 1 << 5
	MajorBytes byte = 2 << 5
	MajorText  byte = 3 << 5
	MajorArray byte = 4 << 5
	MajorMap   byte = 5 << 5

	False byte = 0xf4
	True  byte = 0xf5
	Null  byte = 0xf6
)

// AppendHead appends the head of an item of the major type with argument n
// (a length, a count or an integer's value) in its shortest form.
func AppendHead(dst []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(dst, major|byte(n))
	case n <= math.MaxUint8:
		return append(dst, major|24, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, major|25), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, major|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, major|27), n)
}

// AppendText writes a text string, as it is (invalid UTF-8 included, as
// the library writes a Go string).
func AppendText(dst []byte, s string) []byte {
	return append(AppendHead(dst, MajorText, uint64(len(s))), s...)
}

// AppendBytes writes a byte string; nil is null, as the library writes it.
func AppendBytes(dst, b []byte) []byte {
	if b == nil {
		return append(dst, Null)
	}
	return append(AppendHead(dst, MajorBytes, uint64(len(b))), b...)
}

// AppendInt writes an integer in its shortest form.
func AppendInt(dst []byte, i int) []byte { return AppendInt64(dst, int64(i)) }

// AppendInt64 writes an integer in its shortest form.
func AppendInt64(dst []byte, i int64) []byte {
	if i < 0 {
		return AppendHead(dst, MajorNeg, uint64(-1-i))
	}
	return AppendHead(dst, MajorUint, uint64(i))
}

// AppendBool writes true or false.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, True)
	}
	return append(dst, False)
}

// AppendList writes an array of list's items; a nil list is null.
func AppendList[T any](dst []byte, list []T, item func([]byte, *T) []byte) []byte {
	if list == nil {
		return append(dst, Null)
	}
	dst = AppendHead(dst, MajorArray, uint64(len(list)))
	for i := range list {
		dst = item(dst, &list[i])
	}
	return dst
}

// AppendStrings writes an array of text strings; a nil slice is null.
func AppendStrings(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, Null)
	}
	dst = AppendHead(dst, MajorArray, uint64(len(list)))
	for _, s := range list {
		dst = AppendText(dst, s)
	}
	return dst
}

// Fields writes the map of a struct's fields. Which fields are omitted is
// only known as they are written, so Open reserves the one-byte head, Key
// counts each field it writes, and Close patches the count into the head.
type Fields struct {
	head int // offset of the head in dst
	n    byte
}

// Open starts the map at the end of dst (a struct has fewer than 24
// fields, so its head is one byte).
func (f *Fields) Open(dst []byte) []byte {
	f.head, f.n = len(dst), 0
	return append(dst, MajorMap)
}

// Key appends an integer key (keyasint, below 24).
func (f *Fields) Key(dst []byte, k byte) []byte {
	f.n++
	return append(dst, MajorUint|k)
}

// Name appends a text key (a field without a cbor tag).
func (f *Fields) Name(dst []byte, s string) []byte {
	f.n++
	return AppendText(dst, s)
}

// Close writes the number of fields written into the map's head.
func (f *Fields) Close(dst []byte) []byte {
	dst[f.head] = MajorMap | f.n
	return dst
}

// Grow returns dst with room for n more bytes, in one allocation when it
// needs one (slices.Grow takes two under the race detector).
func Grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// AppendEnvelope writes an Envelope's head and kind; the body's encoding,
// appended next, completes it (the body is a cbor.RawMessage, embedded as
// it is).
func AppendEnvelope(dst []byte, kind string) []byte {
	dst = AppendText(append(dst, MajorMap|2, MajorUint|1), kind)
	return append(dst, MajorUint|2)
}
