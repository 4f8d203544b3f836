package codec

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// ToolLists stores model calls' tool lists by reference. A step whose
// action is a model call with tools keeps, instead of the tools, the
// SHA-256 digest of their encoding (core.AppendTools); the list itself is
// stored once per store, keyed by that digest, so a step writes nothing
// the run's config already holds, and a list shared by many runs (one
// agent's) is stored once. A store's ToolLists remembers which digests it
// holds and the lists it decoded; both are bounded caches.
type ToolLists struct {
	mu     sync.Mutex
	stored map[string]bool
	lists  map[string][]core.Tool
	// last is the most recent list encoded, to skip hashing it again when
	// the next model call carries an equal one, and encoding it again when
	// it carries the very same slice (a run's config is not changed in
	// place while it runs).
	lastEnc, lastDigest []byte
	lastFirst           *core.Tool
	lastLen             int
}

// maxToolLists bounds each cache.
const maxToolLists = 1024

// Ref returns the digest of tools, and their encoding when this store is
// not known to hold them yet.
func (t *ToolLists) Ref(tools []core.Tool) (digest, enc []byte, err error) {
	t.mu.Lock()
	if t.lastFirst == &tools[0] && t.lastLen == len(tools) {
		digest, enc = t.lastDigest, t.lastEnc
		stored := t.stored[string(digest)]
		t.mu.Unlock()
		if stored {
			return digest, nil, nil
		}
		return digest, enc, nil
	}
	t.mu.Unlock()
	enc = core.AppendTools(nil, tools)
	if err := CheckCBOR(enc); err != nil {
		return nil, nil, fmt.Errorf("the tool list would not load back: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastEnc != nil && bytes.Equal(enc, t.lastEnc) {
		digest = t.lastDigest
	} else {
		sum := sha256.Sum256(enc)
		digest = sum[:]
		t.lastEnc, t.lastDigest = enc, digest
	}
	t.lastFirst, t.lastLen = &tools[0], len(tools)
	if t.stored[string(digest)] {
		return digest, nil, nil
	}
	return digest, enc, nil
}

// Stored records that the store holds the list with this digest (once the
// transaction that wrote it committed, or after reading it back).
func (t *ToolLists) Stored(digest []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stored == nil || len(t.stored) >= maxToolLists {
		t.stored = map[string]bool{}
	}
	t.stored[string(digest)] = true
}

// Forget drops what the cache knows (after a failed transaction that may
// have written a list it then rolled back).
func (t *ToolLists) Forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stored, t.lists = nil, nil
}

// Resolve returns the tool list with this digest, decoded from the body
// load returns when it is not cached. A body whose digest differs is
// store.ErrCorrupt.
func (t *ToolLists) Resolve(digest []byte, load Load) ([]core.Tool, error) {
	t.mu.Lock()
	list, ok := t.lists[string(digest)]
	t.mu.Unlock()
	if ok {
		return list, nil
	}
	body, err := load.verified(digest, "the tool list")
	if err != nil {
		return nil, err
	}
	if list, err = core.DecodeTools(body); err != nil {
		return nil, fmt.Errorf("%w: the tool list %x: %w", store.ErrCorrupt, digest[:6], err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lists == nil || len(t.lists) >= maxToolLists {
		t.lists = map[string][]core.Tool{}
	}
	t.lists[string(digest)] = list
	if t.stored == nil || len(t.stored) >= maxToolLists {
		t.stored = map[string]bool{}
	}
	t.stored[string(digest)] = true
	return list, nil
}

// ToolListSum is the digest a tool list body is stored under.
func ToolListSum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return sum[:]
}
