// Package wire holds the canonical CBOR primitives the core's encoders are
// built on: the encoding and decoding modes (Core Deterministic Encoding,
// strict decoding), item heads in their shortest form, integers, text and
// byte strings, arrays, the map of a struct's fields with integer keys in
// ascending order, the envelope that names an action's or result's kind, and
// the size estimates that let an encoder allocate once.
//
// The contract: each Append function appends exactly the bytes the
// library's encoding mode (EncMode) gives for the same Go value under
// cbor.CoreDetEncOptions, and never fails; a Size function is an upper bound
// of what the matching Append writes. The tests compare every primitive
// with the library (rapid); the core's tests compare its per-type encoders,
// built from these, with the library too.
//
// The package is pure (no I/O, no clock, no randomness, no goroutines); its
// modes are built once when it loads and never change. It knows none of the
// core's types and imports nothing of stepwise: the per-type encoders (State,
// Message, actions, results) stay in core.
package wire
