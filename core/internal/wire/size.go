package wire

import "math"

// Size estimates, so that encoding takes one allocation. They are upper
// bounds: each counts a field whether or not it is omitted, an integer as 9
// bytes, and a struct by its map head and the sizes of its fields, each
// with its key.

const (
	// ListField is a field holding an array: its key and the array's head.
	ListField = 1 + 9
	// IntField is a field holding an integer: its key and the integer.
	IntField = 1 + 9
	// BoolField is a field holding a bool: its key and the value.
	BoolField = 1 + 1
)

// TextSize is the size of a text field: its key, head and bytes.
func TextSize(s string) int { return FieldSize(len(s)) }

// FieldSize is the size of a field of n bytes of text or bytes: its key,
// head and bytes.
func FieldSize(n int) int {
	switch {
	case n < 24:
		return 2 + n
	case n <= math.MaxUint8:
		return 3 + n
	case n <= math.MaxUint16:
		return 4 + n
	case n <= math.MaxUint32:
		return 6 + n
	default:
		return 10 + n
	}
}

// StringsSize is the size of a field holding an array of text strings.
func StringsSize(list []string) int {
	n := ListField
	for _, s := range list {
		n += TextSize(s)
	}
	return n
}

// EnvelopeSize is the size of an Envelope of kind around a body whose
// fields take fieldsSize bytes.
func EnvelopeSize(kind string, fieldsSize int) int {
	const heads = 1 + 1 + 1 // the envelope's map head, key 2, the body's map head
	return heads + TextSize(kind) + fieldsSize
}
