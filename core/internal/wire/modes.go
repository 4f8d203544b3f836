package wire

import "github.com/fxamacker/cbor/v2"

// The modes, built once when the package loads and never changed.
var (
	encMode cbor.EncMode
	decMode cbor.DecMode
	lenient cbor.DecMode
)

func init() {
	var err error
	if encMode, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic(err)
	}
	strict := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
		MaxArrayElements:  1 << 26,
		MaxMapPairs:       1 << 26,
		MaxNestedLevels:   64,
		IndefLength:       cbor.IndefLengthForbidden,
		UTF8:              cbor.UTF8RejectInvalid,
	}
	if decMode, err = strict.DecMode(); err != nil {
		panic(err)
	}
	loose := strict
	loose.ExtraReturnErrors = cbor.ExtraDecErrorNone
	if lenient, err = loose.DecMode(); err != nil {
		panic(err)
	}
}

// EncMode is the encoding mode: CBOR Core Deterministic Encoding, so that
// the same value always gives the same bytes.
func EncMode() cbor.EncMode { return encMode }

// DecMode is the strict decoding mode: no repeated map key, no field the
// type does not know, no indefinite length, valid UTF-8 only, and bounded
// sizes and nesting.
func DecMode() cbor.DecMode { return decMode }

// LenientDecMode is DecMode that ignores fields the type does not know, for
// reading a state's version before deciding whether to read the rest.
func LenientDecMode() cbor.DecMode { return lenient }

// Envelope wraps an encoded action or result with the name of its kind.
type Envelope struct {
	Kind string          `cbor:"1,keyasint"`
	Body cbor.RawMessage `cbor:"2,keyasint"`
}

// AppendEnveloped appends body, encoded by the library, inside an Envelope
// of kind. On error dst is returned as it was.
func AppendEnveloped(dst []byte, kind string, body []byte) ([]byte, error) {
	env, err := encMode.Marshal(Envelope{Kind: kind, Body: body})
	if err != nil {
		return dst, err
	}
	return append(dst, env...), nil
}
