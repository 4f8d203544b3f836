package streamed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// Events is an SDK's event stream (the ssestream.Stream of
// anthropic-sdk-go and of openai-go).
type Events[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// Reader says how a provider reads its stream.
type Reader[E, T any] struct {
	// Noun names T in the error for a plain reply that is not one ("the
	// reply is not a NOUN (why)").
	Noun string
	// Event handles one event; it returns the reply when the event ends
	// it, else nil.
	Event func(E) (*T, error)
	// End is what the stream ending without a reply means: the reply the
	// events assembled, or an error (the stream broke off).
	End func() (*T, error)
	// Broke is what a read error after the first event means (Broke when
	// nil).
	Broke func(error) error
	// Deltas, when set, are the pieces Event tells: once they pass
	// MaxAssembled the attempt fails (Deltas.Err) and reading stops.
	Deltas *Deltas
}

// Read reads one streamed attempt from s (see the package doc) and closes
// it.
func Read[E, T any](ctx context.Context, s Events[E], r Reader[E, T]) (*T, error) {
	defer s.Close()
	if body := httpcall.Plain(ctx); body != nil {
		var whole T
		if err := json.Unmarshal(body, &whole); err != nil {
			return nil, httpcall.BadReplyf("the reply is not a %s (%v)", r.Noun, err)
		}
		return &whole, nil
	}
	started := false
	for s.Next() {
		started = true
		if reply, err := r.Event(s.Current()); reply != nil || err != nil {
			return reply, err
		}
		if err := r.Deltas.Err(); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		if !started {
			return nil, err // the request failed: Do said why
		}
		if r.Broke != nil {
			return nil, r.Broke(err)
		}
		return nil, Broke(err, "an event of the stream is not JSON")
	}
	return r.End()
}

// Broke is what a failed read of a stream that had started means: a piece
// that is not JSON (notJSON, and why: the reply is unusable, retried like
// a 5xx), or the connection breaking off (retried too).
func Broke(err error, notJSON string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return httpcall.BadReplyf("%s (%v)", notJSON, err)
	}
	return fmt.Errorf("the stream broke off: %w", err)
}
