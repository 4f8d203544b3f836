package shell

// Observers tells each of its observers about every event, in order; nil
// entries are skipped. It lets a command show progress and trace a run at
// once.
type Observers []Observer

// Event implements Observer.
func (list Observers) Event(e Event) {
	for _, o := range list {
		if o != nil {
			o.Event(e)
		}
	}
}

// Join returns the observers that are not nil as one Observer: nil when
// there are none, the one itself when there is one.
func Join(list ...Observer) Observer {
	var out Observers
	for _, o := range list {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}
