package streamed

import "github.com/stepwise-agent/stepwise/shell"

// Deltas tells a request's OnDelta of a streamed reply's pieces. The zero
// value (or one made with a nil OnDelta) tells nothing.
type Deltas struct {
	on    func(shell.ModelDelta)
	calls map[int64]int // the wire's key of a call -> its number
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
	if d != nil && d.on != nil && (m.Text != "" || m.Name != "") {
		d.on(m)
	}
}
