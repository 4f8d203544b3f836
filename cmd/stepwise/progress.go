package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/stepwise-agent/stepwise/shell"
)

// progress prints a run's events on stderr, one line per step. While a
// model call is in flight it shows so: on a terminal a spinner with the
// call's elapsed time, then the reply itself as it streams in (redrawn in
// place, dimmed with color); elsewhere (a file, a pipe) a line when the
// call starts, the streamed reply a line at a time, and a line per retry,
// with no redraws. The answer goes to stdout, not here.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	color   bool
	tty     bool
	spinner *time.Ticker
	done    chan struct{}
	frame   int
	status  string // what the spinner shows (see inPlace); "" for "working…"
	call    *inFlight
	now     func() time.Time
}

// inFlight is the model call being made.
type inFlight struct {
	seq   int
	label string
	start time.Time
	// part is the part of the reply being streamed ("text", "reasoning",
	// "call:NAME"); streaming is set on a terminal once text is shown.
	part      string
	streaming bool
	// line holds the streamed text not yet printed (not a terminal).
	line strings.Builder
}

// lineWidth is where a streamed line is cut when no terminal shows it.
const lineWidth = 100

func newProgress(w io.Writer, color bool) *progress {
	p := &progress{w: w, now: time.Now}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	} else if rw, ok := w.(*redactingWriter); ok {
		p.tty = isTerminal(rw.w)
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
			p.drawSpinner()
			p.mu.Unlock()
		}
	}
}

// drawSpinner redraws the spinner line: the call in flight and its
// elapsed time, or that the run is working. Text being streamed is left
// alone.
func (p *progress) drawSpinner() {
	frame := frames[p.frame%len(frames)]
	switch c := p.call; {
	case c == nil:
		fmt.Fprintf(p.w, "\r\033[K%s %s", frame, p.statusText())
	case !c.streaming:
		fmt.Fprintf(p.w, "\r\033[K%s #%d %s… %s", frame, c.seq, c.label, p.now().Sub(c.start).Round(100*time.Millisecond))
	}
}

// Event prints one event.
func (p *progress) Event(ev shell.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inPlace(ev) {
		return
	}
	switch ev.Kind {
	case "calling":
		p.endCall()
		p.call = &inFlight{seq: ev.Seq, label: ev.Text, start: p.now()}
		if p.tty {
			p.drawSpinner()
			return
		}
		p.line(ev)
		return
	case "delta":
		if p.call != nil {
			p.delta(ev)
			return
		}
	case "retry":
		if p.call != nil && ev.Index > 0 {
			p.endStream()
			p.line(ev)
			if p.tty {
				p.drawSpinner()
			}
			return
		}
	}
	p.endCall()
	p.line(ev)
	switch ev.Kind {
	case "complete", "fail", "external", "interrupted":
		p.stop()
	}
}

// line prints an event on a line of its own.
func (p *progress) line(ev shell.Event) {
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
		case "external", "retry", "stalled":
			line = "\033[33m" + line + "\033[0m"
		default:
			line = "\033[2m" + line + "\033[0m"
		}
	}
	fmt.Fprintln(p.w, line)
}

// delta shows a piece of the reply in flight.
func (p *progress) delta(ev shell.Event) {
	c := p.call
	if p.tty {
		if !c.streaming {
			fmt.Fprint(p.w, "\r\033[K")
			c.streaming = true
		}
		if ev.Part != c.part {
			if c.part != "" {
				fmt.Fprint(p.w, "\n")
			}
			if ev.Part != "text" {
				fmt.Fprintf(p.w, "(%s) ", ev.Part)
			}
			c.part = ev.Part
		}
		if p.color {
			fmt.Fprint(p.w, "\033[2m"+ev.Text+"\033[0m")
		} else {
			fmt.Fprint(p.w, ev.Text)
		}
		return
	}
	if ev.Part != c.part {
		p.flushLine(true)
		c.part = ev.Part
	}
	c.line.WriteString(ev.Text)
	p.flushLine(false)
}

// flushLine prints the streamed text held for a line when it is one:
// every whole line, and a line cut at a space when it grew past
// lineWidth; all of it with rest.
func (p *progress) flushLine(rest bool) {
	c := p.call
	text := c.line.String()
	label := c.part
	if label == "text" {
		label = "reply"
	}
	for {
		i, skip := strings.IndexByte(text, '\n'), 1
		if i < 0 {
			if len(text) <= lineWidth {
				break
			}
			if i = strings.LastIndexByte(text[:lineWidth], ' '); i <= 0 {
				i, skip = lineWidth, 0
				for i > 0 && !utf8.RuneStart(text[i]) {
					i--
				}
			}
		}
		fmt.Fprintf(p.w, "#%-3d %-11s %s\n", c.seq, label, text[:i])
		text = text[i+skip:]
	}
	if rest && text != "" {
		fmt.Fprintf(p.w, "#%-3d %-11s %s\n", c.seq, label, text)
		text = ""
	}
	c.line.Reset()
	c.line.WriteString(text)
}

// endStream finishes what was streamed of the call in flight: the line
// the text was on, or the text held for a line.
func (p *progress) endStream() {
	c := p.call
	if c == nil {
		return
	}
	if p.tty {
		if c.streaming {
			fmt.Fprint(p.w, "\n")
		}
	} else {
		p.flushLine(true)
	}
	c.streaming, c.part = false, ""
}

// endCall ends the call in flight, if any: the next event is not part of
// it.
func (p *progress) endCall() {
	p.endStream()
	p.call = nil
}

func (p *progress) stop() {
	if p.spinner != nil {
		p.spinner.Stop()
		close(p.done)
		p.spinner = nil
	}
}
