package server

import (
	"testing"

	"github.com/stepwise-agent/stepwise/shell"
)

// TestHubTwoDrivesOfARun: when a run's drive ends (it completed) and a
// message posted at once has another worker here drive it on, the end of
// the first drive, and its last step's event, come after the second drive
// began and may come after its model call did: neither takes the second
// drive's "calling" event away, which a stream connecting during that call
// gets first; the second drive's next step does, and so does its end.
func TestHubTwoDrivesOfARun(t *testing.T) {
	h := newHub()
	callingReplayed := func() bool {
		t.Helper()
		sub, done := h.subscribeLive("r")
		defer done()
		live := sub.takeLive()
		return len(live) == 1 && live[0].Kind == "calling" && live[0].Seq == 5
	}

	first := h.began("r")
	h.Event(shell.Event{RunID: "r", Seq: 3, Kind: "model"})
	second := h.began("r") // the first has given the lease up with its end
	h.Event(shell.Event{RunID: "r", Seq: 5, Kind: "calling"})
	h.Event(shell.Event{RunID: "r", Seq: 4, Kind: "complete"}) // the first drive's last event
	h.ended("r", first)
	if !callingReplayed() {
		t.Fatal("the first drive's end took the second drive's call in flight away")
	}
	h.Event(shell.Event{RunID: "r", Seq: 5, Kind: "delta", Text: "part"})
	if !callingReplayed() {
		t.Fatal("a delta took the call in flight away")
	}
	h.Event(shell.Event{RunID: "r", Seq: 6, Kind: "model"})
	if callingReplayed() {
		t.Fatal("the call is over at the second drive's next step, yet a stream is told it is in flight")
	}

	// A drive that ends during its own call (stopped) clears it.
	h.Event(shell.Event{RunID: "r", Seq: 5, Kind: "calling"})
	h.ended("r", second)
	if callingReplayed() {
		t.Fatal("the drive ended, yet a stream is told its call is in flight")
	}
	if len(h.drives) != 0 || len(h.calling) != 0 {
		t.Fatalf("the hub still holds drives %v and calls %v of runs no drive here holds", h.drives, h.calling)
	}
}
