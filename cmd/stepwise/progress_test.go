package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// streamedCall is what the runner reports of a model call whose first
// attempt broke off and whose second streamed a text and a call.
func streamedCall() []shell.Event {
	return []shell.Event{
		{Seq: 3, Kind: "calling", Text: "primary model (4 messages)"},
		{Seq: 3, Kind: "delta", Index: 1, Part: "text", Text: "Lyon is"},
		{Seq: 3, Kind: "retry", Index: 2, Text: "primary model: attempt 1 failed (the stream broke off: unexpected EOF); retry in 500ms"},
		{Seq: 3, Kind: "delta", Index: 3, Part: "reasoning", Text: "Think."},
		{Seq: 3, Kind: "delta", Index: 4, Part: "text", Text: "Paris is the capital"},
		{Seq: 3, Kind: "delta", Index: 5, Part: "text", Text: " of France.\nIt has"},
		{Seq: 3, Kind: "delta", Index: 6, Part: "text", Text: " " + strings.Repeat("many ", 30) + "museums."},
		{Seq: 3, Kind: "delta", Index: 7, Part: "call:get_weather", Text: `{"city":`},
		{Seq: 3, Kind: "delta", Index: 8, Part: "call:get_weather", Text: `"Paris"}`},
		{Seq: 3, Kind: "model", Text: "primary model: 1 tool call(s): get_weather#c1", Duration: 1500 * time.Millisecond, Usage: core.Usage{PromptTokens: 10, CompletionTokens: 5}},
		{Seq: 4, Kind: "tool", Text: "get_weather#c1 ok (4 bytes)"},
	}
}

// TestProgressWithoutTerminal: no redraws, one line per event; the
// streamed reply comes a line at a time (cut at a space past 100 bytes),
// each part labelled, what a failed attempt streamed before its retry
// line.
func TestProgressWithoutTerminal(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true)
	for _, ev := range streamedCall() {
		p.Event(ev)
	}
	want := "#3   calling     primary model (4 messages)\n" +
		"#3   reply       Lyon is\n" +
		"#3   retry       primary model: attempt 1 failed (the stream broke off: unexpected EOF); retry in 500ms\n" +
		"#3   reasoning   Think.\n" +
		"#3   reply       Paris is the capital of France.\n" +
		"#3   reply       It has " + strings.TrimSpace(strings.Repeat("many ", 18)) + "\n" +
		"#3   reply       " + strings.Repeat("many ", 12) + "museums.\n" +
		"#3   call:get_weather {\"city\":\"Paris\"}\n" +
		"#3   model       primary model: 1 tool call(s): get_weather#c1  1.5s  [10+5 tokens]\n" +
		"#4   tool        get_weather#c1 ok (4 bytes)\n"
	if b.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
	if strings.ContainsAny(b.String(), "\r\033") {
		t.Errorf("redraws or colors without a terminal: %q", b.String())
	}
}

// TestProgressOnATerminal: the call in flight is a spinner line with its
// elapsed time, then the reply flows in place, dimmed with color and
// plain without (NO_COLOR).
func TestProgressOnATerminal(t *testing.T) {
	for _, color := range []bool{true, false} {
		var b bytes.Buffer
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		p := &progress{w: &b, tty: true, color: color, now: func() time.Time { return clock }}
		evs := streamedCall()
		p.Event(evs[0])
		clock = clock.Add(2300 * time.Millisecond)
		p.drawSpinner()
		for _, ev := range evs[1:] {
			p.Event(ev)
		}
		out := b.String()
		plain := strings.NewReplacer("\033[2m", "", "\033[0m", "", "\033[33m", "").Replace(out)
		for _, want := range []string{
			"\r\033[K⠋ #3 primary model (4 messages)… 0s",
			"\r\033[K⠋ #3 primary model (4 messages)… 2.3s",
			"Lyon is\n",
			"primary model: attempt 1 failed",
			"(reasoning) ",
			"Paris is the capital",
			" of France.\nIt has many",
			"\n(call:get_weather) ",
			`"Paris"}` + "\n",
		} {
			if !strings.Contains(plain, want) {
				t.Errorf("color=%v: output lacks %q:\n%q", color, want, out)
			}
		}
		if strings.Contains(out, "#3   reply") {
			t.Errorf("the reply printed as lines on a terminal: %q", out)
		}
		if hasColor := strings.Contains(out, "\033[2m") || strings.Contains(out, "\033[33m"); hasColor != color {
			t.Errorf("color=%v, but colors in the output: %v", color, hasColor)
		}
	}
}

// TestRedactingWriterStreams: text goes out as it is written, but a
// secret split across writes is caught.
func TestRedactingWriterStreams(t *testing.T) {
	var b bytes.Buffer
	w := newRedactingWriter(&b, shell.NewRedactor([]shell.Secret{{Name: "KEY", Value: "sk-secret-123"}})).(*redactingWriter)
	w.Write([]byte("Paris is big."))
	if b.String() != "Paris is big." {
		t.Errorf("held back text that cannot be a secret: %q", b.String())
	}
	w.Write([]byte(" sk-sec"))
	w.Write([]byte("ret-123 and sk-"))
	w.Write([]byte("other"))
	w.Flush()
	if want := "Paris is big. [redacted:KEY] and sk-other"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
