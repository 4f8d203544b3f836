package codec

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Blobs: what every run of an agent repeats is stored once per store, in
// a table of bodies keyed by the SHA-256 of their bytes (ADR 0035):
//
//   - the agent the run records (store.NewRun.Config, an agent change's
//     config), when it is at least ShareMin bytes: the run's row keeps
//     the digest instead (SplitConfig);
//   - the run's first message, when it is a system message (the agent's
//     instructions) whose encoding is at least ShareMin bytes: step 0's
//     row keeps, in its place, a reference item (Initial).
//
// A reference item is a CBOR tag (0x5357) around the 32-byte digest. Only
// message 0 is ever stored so, so a reference can only open the messages
// of step 0's row or of a segment that starts at message 0: a reader
// splices the body in there (inline) before decoding, and a reference
// anywhere else fails to decode as a message (store.ErrCorrupt). Message
// checksums (Row.MsgSum) are over the message's own encoding, never over
// the reference, so the append-only check does not see the difference.

// ShareMin is the size from which an agent's config or first message is
// stored once: below it, a reference and its row cost about what they
// save.
const ShareMin = 512

// refHead is the head of a reference item: tag 0x5357 ("SW", two bytes
// of argument: 0xd9) and a 32-byte byte string (0x58 0x20).
var refHead = []byte{0xd9, 0x53, 0x57, 0x58, DigestSize}

// refSize is the size of a reference item.
const refSize = 5 + DigestSize

// Load returns the body stored under a digest (store.ErrCorrupt when the
// store lacks it).
type Load func(digest []byte) ([]byte, error)

// verified is the body load returns for digest, checked against it: one
// whose digest differs is store.ErrCorrupt, naming it as what.
func (load Load) verified(digest []byte, what string) ([]byte, error) {
	body, err := load(digest)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(BlobSum(body), digest) {
		return nil, fmt.Errorf("%w: %s %x fails its digest", store.ErrCorrupt, what, digest[:6])
	}
	return body, nil
}

// Blobs remembers which bodies a store holds and the bodies it read, both
// bounded; it is safe for concurrent use.
type Blobs struct {
	mu     sync.Mutex
	stored map[string]bool
	bodies map[string][]byte
	size   int
	// recent are the last bodies Ref hashed (copies) with their digests:
	// a run's config and its instructions, the same for every run of an
	// agent, are compared rather than hashed again.
	recent [2]struct{ body, digest []byte }
	next   int
}

// The caches' bounds: digests known stored, and bytes of bodies kept.
const (
	maxBlobsStored = 4096
	maxBlobsBytes  = 16 << 20
)

// BlobSum is the digest a body is stored under.
func BlobSum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}

// Ref returns the digest of body, and body again when this store is not
// known to hold it yet (the caller stores it in the transaction that
// refers to it, then calls Stored).
func (b *Blobs) Ref(body []byte) (digest, fresh []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.recent {
		if r.digest != nil && bytes.Equal(r.body, body) {
			digest = r.digest
		}
	}
	if digest == nil {
		digest = BlobSum(body)
		b.recent[b.next].body, b.recent[b.next].digest = bytes.Clone(body), digest
		b.next = (b.next + 1) % len(b.recent)
	}
	if b.stored[string(digest)] {
		return digest, nil
	}
	return digest, body
}

// Stored records that the store holds the body with this digest.
func (b *Blobs) Stored(digest []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.storedLocked(digest)
}

func (b *Blobs) storedLocked(digest []byte) {
	if b.stored == nil || len(b.stored) >= maxBlobsStored {
		b.stored = map[string]bool{}
	}
	b.stored[string(digest)] = true
}

// Resolve returns the body stored under digest, through load when it is
// not cached. A body whose digest differs is store.ErrCorrupt.
func (b *Blobs) Resolve(digest []byte, load Load) ([]byte, error) {
	b.mu.Lock()
	body, ok := b.bodies[string(digest)]
	b.mu.Unlock()
	if ok {
		return body, nil
	}
	body, err := load.verified(digest, "the stored body")
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodies == nil || b.size+len(body) > maxBlobsBytes {
		b.bodies, b.size = map[string][]byte{}, 0
	}
	b.bodies[string(digest)] = body
	b.size += len(body)
	b.storedLocked(digest)
	return body, nil
}

// SplitConfig is how a run's or an agent change's config is stored: inline
// (digest nil), or by digest with an empty inline part, fresh being the
// body to store when the store is not known to hold it.
func (b *Blobs) SplitConfig(config []byte) (inline, digest, fresh []byte) {
	if b == nil || len(config) < ShareMin {
		return config, nil, nil
	}
	digest, fresh = b.Ref(config)
	return []byte{}, digest, fresh
}

// shareFirst returns the reference that replaces msgs[0] in step 0's row,
// given its encoding enc, with the body to store when fresh; nil when
// msgs[0] is stored inline.
func (b *Blobs) shareFirst(msgs []core.Message, enc []byte) (ref, digest, fresh []byte) {
	if b == nil || len(msgs) == 0 || msgs[0].Role != core.RoleSystem || len(enc) < ShareMin {
		return nil, nil, nil
	}
	digest, fresh = b.Ref(enc)
	return append(append(make([]byte, 0, refSize), refHead...), digest...), digest, fresh
}

// inline returns the encodings of messages that start at message 0 with a
// leading reference replaced by the body it names, loaded through load;
// msgs itself when it holds none.
func inline(msgs []byte, load Load) ([]byte, error) {
	if !bytes.HasPrefix(msgs, refHead) {
		return msgs, nil
	}
	if len(msgs) < refSize {
		return nil, fmt.Errorf("%w: a truncated reference to the first message", store.ErrCorrupt)
	}
	if load == nil {
		return nil, fmt.Errorf("%w: a reference to the first message where none is resolved", store.ErrCorrupt)
	}
	body, err := load(msgs[len(refHead):refSize])
	if err != nil {
		return nil, fmt.Errorf("the first message: %w", err)
	}
	out := make([]byte, 0, len(body)+len(msgs)-refSize)
	return append(append(out, body...), msgs[refSize:]...), nil
}

// inlineSegments returns segs with the one that starts at message 0
// replaced by a copy whose body holds its messages uncompressed, a leading
// reference replaced by the message it names (decoding it then does not
// decompress it again).
func inlineSegments(segs []Segment, load Load) ([]Segment, error) {
	for i := range segs {
		sg := &segs[i]
		if sg.First != 0 || sg.Body == nil {
			continue
		}
		msgs, err := sg.messages()
		if err != nil {
			return segs, nil // a bad body fails where it is decoded
		}
		if msgs, err = inline(msgs, load); err != nil {
			return nil, fmt.Errorf("the segment of steps %d-%d: %w", sg.From, sg.To, err)
		}
		out := append([]Segment(nil), segs...)
		out[i].Body = append(msgs, formatPlain)
		return out, nil
	}
	return segs, nil
}
