package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// Damage is one record of a store damaged in place, for Harness.Damage.
// The flips invert one byte (at At, modulo the length) and leave the
// record's checksum as it was; the reseals write bytes that do not decode
// under a checksum that matches them, as a bug in a writer would.
type Damage struct {
	// Kind is what to damage; see the Damage* kinds.
	Kind DamageKind
	// RunID is the run whose record it is (none for DamageToolCache).
	RunID string
	// Seq is the step: of the step row, of the segment's first step, of
	// the intent or of the agent change; for DamageInbox, the message's
	// number.
	Seq int
	// CallID names the intent of DamageIntent.
	CallID string
	// Key names the tool cache entry of DamageToolCache.
	Key string
	// At is the byte that a flip inverts.
	At int
}

// DamageKind is a kind of damage a Harness.Damage does.
type DamageKind string

// The kinds of damage the suite asks a Harness.Damage for.
const (
	// DamageStep flips a byte of the body of step Seq's row.
	DamageStep DamageKind = "step"
	// DamageSegment flips a byte of the body of the segment starting at
	// step Seq.
	DamageSegment DamageKind = "segment"
	// DamageIntent flips a byte of the arguments of intent CallID of step
	// Seq.
	DamageIntent DamageKind = "intent"
	// DamageAgentChange flips a byte of the config of the last agent
	// change recorded at step Seq.
	DamageAgentChange DamageKind = "agent change"
	// DamageToolLists flips a byte of the body of every stored tool list.
	DamageToolLists DamageKind = "tool lists"
	// DamageToolListsGone deletes every stored tool list.
	DamageToolListsGone DamageKind = "tool lists gone"
	// DamageBlobs flips a byte of every body stored once (an agent's
	// config, a run's first message; ADR 0035).
	DamageBlobs DamageKind = "blobs"
	// DamageBlobsGone deletes every body stored once.
	DamageBlobsGone DamageKind = "blobs gone"
	// DamageToolCache flips a byte of the result of tool cache entry Key.
	DamageToolCache DamageKind = "tool cache"
	// DamageInbox flips a byte of the content of message Seq of the
	// run's inbox (Runs.PostMessage).
	DamageInbox DamageKind = "inbox"
	// ResealStep replaces step Seq's state by a CBOR map holding only a
	// version ({1: 1}: no phase), under a checksum that matches.
	ResealStep DamageKind = "reseal step"
	// ResealSegment replaces the messages of the segment starting at step
	// Seq by bytes that do not decode (0xff 0x01: a break code where a
	// message starts), under a checksum that matches.
	ResealSegment DamageKind = "reseal segment"
)

// damage asks h to damage a record, skipping the test when h cannot.
func damage(t *testing.T, h Harness, s store.Store, d Damage) {
	t.Helper()
	if h.Damage == nil {
		t.Skip("storetest: Harness.Damage is nil")
	}
	h.Damage(t, s, d)
}

// wantCorrupt checks that err is store.ErrCorrupt and names every one of
// names.
func wantCorrupt(t *testing.T, err error, names ...string) {
	t.Helper()
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("got %v, want store.ErrCorrupt", err)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Fatalf("error %q does not name %q", err, n)
		}
	}
}
