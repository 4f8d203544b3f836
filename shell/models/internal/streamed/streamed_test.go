package streamed_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
	"github.com/stepwise-agent/stepwise/shell/models/internal/streamed"
)

func TestDeltasNumberCallsInTheOrderTheyStart(t *testing.T) {
	var got []shell.ModelDelta
	d := streamed.NewDeltas(func(m shell.ModelDelta) { got = append(got, m) })
	d.Text("Hel")
	d.Text("") // not told
	d.CallStart(7, "search")
	d.Reasoning("think")
	d.CallStart(3, "fetch")
	d.CallArgs(7, `{"q":`)
	d.CallArgs(3, "") // not told
	d.CallArgs(3, `{}`)
	want := []shell.ModelDelta{
		{Kind: shell.DeltaText, Text: "Hel"},
		{Kind: shell.DeltaCall, Call: 0, Name: "search"},
		{Kind: shell.DeltaReasoning, Text: "think"},
		{Kind: shell.DeltaCall, Call: 1, Name: "fetch"},
		{Kind: shell.DeltaCall, Call: 0, Text: `{"q":`},
		{Kind: shell.DeltaCall, Call: 1, Text: `{}`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deltas\n got %+v\nwant %+v", got, want)
	}
	streamed.NewDeltas(nil).Text("no one listens") // no panic
}

// events is a stream of ints that fails with err after them.
type events struct {
	evs    []int
	i      int
	err    error
	closed bool
}

func (e *events) Next() bool {
	if e.i < len(e.evs) {
		e.i++
		return true
	}
	return false
}
func (e *events) Current() int { return e.evs[e.i-1] }
func (e *events) Err() error   { return e.err }
func (e *events) Close() error { e.closed = true; return nil }

// reader sums the events into a reply; 0 ends the reply, -1 is an error
// event.
func reader(sum *int) streamed.Reader[int, int] {
	return streamed.Reader[int, int]{
		Noun: "sum",
		Event: func(n int) (*int, error) {
			switch n {
			case 0:
				return sum, nil
			case -1:
				return nil, errors.New("error event")
			}
			*sum += n
			return nil, nil
		},
		End: func() (*int, error) { return nil, errors.New("ended early") },
	}
}

func TestRead(t *testing.T) {
	refused := errors.New("refused")
	for _, c := range []struct {
		name   string
		s      *events
		sum    int
		errHas string
		bad    bool // a *BadReplyError
	}{
		{"a reply", &events{evs: []int{1, 2, 0, 5}}, 3, "", false},
		{"an error event", &events{evs: []int{1, -1}}, 0, "error event", false},
		{"ended early", &events{evs: []int{1, 2}}, 0, "ended early", false},
		{"failed before any event", &events{err: refused}, 0, "refused", false},
		{"broke off", &events{evs: []int{1}, err: io.ErrUnexpectedEOF}, 0, "the stream broke off: unexpected EOF", false},
		{"not JSON", &events{evs: []int{1}, err: &json.SyntaxError{}}, 0, "an event of the stream is not JSON", true},
	} {
		sum := 0
		got, err := streamed.Read(context.Background(), c.s, reader(&sum))
		if c.errHas == "" {
			if err != nil || got == nil || *got != c.sum {
				t.Errorf("%s: %v, %v; want %d", c.name, got, err, c.sum)
			}
		} else if err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%s: err = %v, want it to say %q", c.name, err, c.errHas)
		}
		var bad *httpcall.BadReplyError
		if errors.As(err, &bad) != c.bad {
			t.Errorf("%s: err = %#v; a bad reply: %v", c.name, err, c.bad)
		}
		if c.name == "failed before any event" && err != refused {
			t.Errorf("%s: err = %v, want the request's own error", c.name, err)
		}
		if !c.s.closed {
			t.Errorf("%s: the stream was not closed", c.name)
		}
	}
}

// TestReadStopsPastMaxAssembled: pieces adding up to more than
// MaxAssembled fail the attempt permanently at the event that passed it,
// told or not, and the rest of the stream is not read.
func TestReadStopsPastMaxAssembled(t *testing.T) {
	piece := strings.Repeat("z", 1<<20)
	s := &events{evs: make([]int, 100)}
	d := streamed.NewDeltas(nil)
	read := 0
	_, err := streamed.Read(context.Background(), s, streamed.Reader[int, int]{
		Event:  func(int) (*int, error) { read++; d.Text(piece); return nil, nil },
		End:    func() (*int, error) { t.Fatal("the stream was read to its end"); return nil, nil },
		Deltas: d,
	})
	if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), "larger than 8388608 bytes") {
		t.Fatalf("err = %v", err)
	}
	if want := streamed.MaxAssembled/len(piece) + 1; read != want || !s.closed {
		t.Errorf("read %d events (closed %v), want %d", read, s.closed, want)
	}
	if err := streamed.NewDeltas(nil).Err(); err != nil {
		t.Errorf("an empty reply: %v", err)
	}
}
