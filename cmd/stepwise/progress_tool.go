package main

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/shell"
)

// inPlace shows a running call's progress ("tool NAME: 40% — message") on
// a terminal in the spinner's line, each report replacing the last, and
// reports whether it did; any other event clears it. Elsewhere progress is
// a line like any event. p.mu is held.
func (p *progress) inPlace(ev shell.Event) bool {
	if ev.Kind != "progress" {
		p.status = ""
		return false
	}
	if !p.tty || p.spinner == nil {
		return false
	}
	p.status = ev.Text
	fmt.Fprintf(p.w, "\r\033[K%s %s", frames[p.frame%len(frames)], p.status)
	return true
}

func (p *progress) statusText() string {
	if p.status == "" {
		return "working…"
	}
	return p.status
}
