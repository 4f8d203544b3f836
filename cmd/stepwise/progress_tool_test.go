package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// On a terminal a call's progress replaces itself in the spinner's line,
// and the next event's line takes its place; elsewhere each report is a
// line.
func TestProgressInPlace(t *testing.T) {
	var b strings.Builder
	p := &progress{w: &b, tty: true, spinner: time.NewTicker(time.Hour)}
	defer p.spinner.Stop()
	p.Event(shell.Event{Seq: 2, Kind: "progress", Text: "tool t__slow: 40% — copying"})
	p.Event(shell.Event{Seq: 2, Kind: "progress", Text: "tool t__slow: 80% — copying"})
	if got := b.String(); got != "\r\033[K⠋ tool t__slow: 40% — copying\r\033[K⠋ tool t__slow: 80% — copying" {
		t.Fatalf("terminal output = %q", got)
	}
	if p.statusText() != "tool t__slow: 80% — copying" {
		t.Fatalf("the spinner shows %q", p.statusText())
	}
	p.Event(shell.Event{Seq: 2, Kind: "tool", Text: "t__slow#c1 ok (3 bytes)"})
	if p.statusText() != "working…" || !strings.HasSuffix(b.String(), "\r\033[K#2   tool        t__slow#c1 ok (3 bytes)\n") {
		t.Fatalf("after the call: spinner %q, output %q", p.statusText(), b.String())
	}

	var plain strings.Builder
	q := &progress{w: &plain}
	q.Event(shell.Event{Seq: 2, Kind: "progress", Text: "tool t__slow: 40% — copying"})
	if got := plain.String(); got != "#2   progress    tool t__slow: 40% — copying\n" {
		t.Fatalf("plain output = %q", got)
	}
}
