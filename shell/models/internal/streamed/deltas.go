package streamed

import (
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// MaxAssembled bounds what a streamed reply assembles (its text,
// reasoning, and tool calls' names and arguments, in bytes): the limit of
// a reply read whole (httpcall.DefaultMaxReply).
const MaxAssembled = httpcall.DefaultMaxReply

// Deltas tells a request's OnDelta of a streamed reply's pieces, and
// counts their bytes (Err). The zero value (or one made with a nil
// OnDelta) tells nothing.
type Deltas struct {
	on    func(shell.ModelDelta)
	calls map[int64]int // the wire's key of a call -> its number
	size  int
}

// Err is, once the pieces told add up to more than MaxAssembled bytes, the
// attempt's permanent failure: the reply is too large to keep. A provider
// checks it after each event and stops reading.
func (d *Deltas) Err() error {
	if d == nil || d.size <= MaxAssembled {
		return nil
	}
	return httpcall.Permanentf("the reply is larger than %d bytes (the limit of a model's reply)", MaxAssembled)
}

// NewDeltas tells on (the request's OnDelta, perhaps nil).
func NewDeltas(on func(shell.ModelDelta)) *Deltas {
	return &Deltas{on: on, calls: map[int64]int{}}
}

// Text tells a piece of the reply's text.
func (d *Deltas) Text(s string) { d.tell(shell.ModelDelta{Kind: shell.DeltaText, Text: s}) }

// Reasoning tells a piece of the model's reasoning.
func (d *Deltas) Reasoning(s string) { d.tell(shell.ModelDelta{Kind: shell.DeltaReasoning, Text: s}) }

// CallStart numbers the call the wire knows by key (the next number) and
// tells its name.
func (d *Deltas) CallStart(key int64, name string) {
	n := len(d.calls)
	d.calls[key] = n
	d.Call(n, name, "")
}

// CallArgs tells a piece of the arguments of the call the wire knows by
// key.
func (d *Deltas) CallArgs(key int64, s string) { d.Call(d.calls[key], "", s) }

// Call tells a piece of call number n: its name, when known, and a piece
// of its arguments.
func (d *Deltas) Call(n int, name, args string) {
	d.tell(shell.ModelDelta{Kind: shell.DeltaCall, Call: n, Name: name, Text: args})
}

func (d *Deltas) tell(m shell.ModelDelta) {
	if d == nil {
		return
	}
	d.size += len(m.Text) + len(m.Name)
	if d.on != nil && (m.Text != "" || m.Name != "") {
		d.on(m)
	}
}
