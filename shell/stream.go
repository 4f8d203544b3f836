package shell

import (
	"fmt"
	"time"

	"github.com/stepwise-agent/stepwise/core"
)

// callStream turns what a provider reports during one model call (the
// pieces of its reply, its retries) into Observer events: "delta" and
// "retry", numbered by Index from 1. Pieces are redacted as they pass,
// a secret split across pieces included (a StreamRedactor per part, so
// that interleaved parts do not mix). Nothing here reaches the store: the
// checkpoint holds the reply Complete returns.
type callStream struct {
	r     *Runner
	runID string
	seq   int
	role  core.ModelRole
	x     Redactor
	n     int
	// parts are the parts seen in this attempt, in order of appearance,
	// each with its redactor; names maps a call's index to its name.
	parts []streamPart
	names map[int]string
}

type streamPart struct {
	name string
	red  *StreamRedactor
}

// modelStream hooks a model request up to the observer; without one it
// leaves the request alone, so a provider has nobody to tell.
func (r *Runner) modelStream(req *ModelRequest, cur *cursor, role core.ModelRole, x Redactor) *callStream {
	if r.opts.Observer == nil {
		return nil
	}
	s := &callStream{r: r, runID: cur.id, seq: cur.seq, role: role, x: x, names: map[int]string{}}
	req.OnDelta, req.OnRetry = s.delta, s.retry
	r.emit(func() Event {
		n, plural := len(req.Messages), "s"
		if n == 1 {
			plural = ""
		}
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "calling", Text: fmt.Sprintf("%s model (%d message%s)", role, n, plural), Start: time.Now()}
	})
	return s
}

func (s *callStream) delta(d ModelDelta) {
	part := string(d.Kind)
	if d.Kind == DeltaCall {
		if d.Name != "" {
			s.names[d.Call] = d.Name
		}
		part = "call:" + s.x.String(s.names[d.Call])
	}
	p := s.part(part)
	s.send(part, p.red.Write(d.Text))
}

func (s *callStream) part(name string) *streamPart {
	for i := range s.parts {
		if s.parts[i].name == name {
			return &s.parts[i]
		}
	}
	s.parts = append(s.parts, streamPart{name: name, red: s.x.Stream()})
	return &s.parts[len(s.parts)-1]
}

func (s *callStream) send(part, text string) {
	if text == "" {
		return
	}
	s.n++
	s.r.emit(func() Event {
		return Event{RunID: s.runID, Seq: s.seq, Kind: "delta", Text: text, Index: s.n, Part: part}
	})
}

// retry reports a retry; what the failed attempt streamed is void, so
// what its redactors hold back is dropped.
func (s *callStream) retry(rt ModelRetry) {
	s.parts, s.names = nil, map[int]string{}
	s.n++
	s.r.emit(func() Event {
		return Event{RunID: s.runID, Seq: s.seq, Kind: "retry", Index: s.n,
			Text: fmt.Sprintf("%s model: attempt %d failed (%s); retry in %s", s.role, rt.Attempt, firstLine(s.x.String(rt.Reason)), rt.Wait.Round(time.Millisecond))}
	})
}

// flush sends what the redactors still hold, once the call returned.
func (s *callStream) flush() {
	if s == nil {
		return
	}
	for _, p := range s.parts {
		s.send(p.name, p.red.Flush())
	}
	s.parts = nil
}
