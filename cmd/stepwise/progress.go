package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// progress prints one line per step on stderr, with a spinner between steps
// when stderr is a terminal.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	color   bool
	tty     bool
	spinner *time.Ticker
	done    chan struct{}
	frame   int
	status  string // what the spinner shows (see inPlace); "" for "working…"
}

func newProgress(w io.Writer, color bool) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	p.color = color && p.tty
	if p.tty {
		p.spinner = time.NewTicker(120 * time.Millisecond)
		p.done = make(chan struct{})
		go p.spin()
	}
	return p
}

var frames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (p *progress) spin() {
	for {
		select {
		case <-p.done:
			return
		case <-p.spinner.C:
			p.mu.Lock()
			p.frame++
			fmt.Fprintf(p.w, "\r\033[K%s %s", frames[p.frame%len(frames)], p.statusText())
			p.mu.Unlock()
		}
	}
}

// Event prints one step.
func (p *progress) Event(ev shell.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inPlace(ev) {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	line := fmt.Sprintf("#%-3d %-11s %s", ev.Seq, ev.Kind, ev.Text)
	if ev.Duration > 0 {
		line += fmt.Sprintf("  %s", ev.Duration.Round(time.Millisecond))
	}
	if ev.Usage.PromptTokens+ev.Usage.CompletionTokens > 0 {
		line += fmt.Sprintf("  [%d+%d tokens]", ev.Usage.PromptTokens, ev.Usage.CompletionTokens)
	}
	if p.color {
		switch ev.Kind {
		case "complete":
			line = "\033[32m" + line + "\033[0m"
		case "fail", "interrupted":
			line = "\033[31m" + line + "\033[0m"
		case "external":
			line = "\033[33m" + line + "\033[0m"
		default:
			line = "\033[2m" + line + "\033[0m"
		}
	}
	fmt.Fprintln(p.w, line)
	switch ev.Kind {
	case "complete", "fail", "external", "interrupted":
		p.stop()
	}
}

func (p *progress) stop() {
	if p.spinner != nil {
		p.spinner.Stop()
		close(p.done)
		p.spinner = nil
	}
}
