// Package modeltest is the in-process model endpoint the provider tests
// talk to: an httptest server that answers from a queue of scripted
// replies (whole JSON bodies, or Server-Sent Events sent one at a time,
// optionally cut off mid-stream) and records each request as it arrived
// on the wire; and a fake clock that records the waits between attempts.
package modeltest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted HTTP response.
type Reply struct {
	Status int               // default 200
	Header map[string]string // set before the status is written
	// Body is a whole reply, sent as application/json unless Header sets
	// a Content-Type.
	Body string
	// Events, when set, make the reply an event stream (text/event-stream),
	// each event written and flushed on its own.
	Events []Event
	// Cut breaks the connection off after the events, before the stream
	// ends properly.
	Cut bool
	// Hang makes the handler wait until the client gives up.
	Hang bool
	// Before, when set, is called before event i is sent (from 0); a test
	// blocks there to see what the client did with the events so far.
	Before func(i int)
}

// Event is one Server-Sent Event. An empty Name sends no event: line
// (OpenAI's chat completions stream only data: lines).
type Event struct {
	Name string
	Data string
}

// Request is one request as the server saw it.
type Request struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

// Server is an in-process endpoint. The last reply repeats once the queue
// is drained, until Push queues more.
type Server struct {
	*httptest.Server
	t *testing.T

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	// repeating is set once the last reply was served: it repeats until
	// Push queues more.
	repeating bool
}

// New starts a Server answering with replies, closed when t ends.
func New(t *testing.T, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Push queues more replies, after those not served yet.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repeating {
		s.replies, s.repeating = nil, false
	}
	s.replies = append(s.replies, replies...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("modeltest: read the request: %v", err)
	}
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	if len(s.replies) == 0 {
		s.mu.Unlock()
		http.Error(w, `{"error":{"message":"modeltest: no reply scripted"}}`, http.StatusTeapot)
		return
	}
	rep := s.replies[0]
	if len(s.replies) > 1 {
		s.replies = s.replies[1:]
	} else {
		s.repeating = true
	}
	s.mu.Unlock()
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if rep.Events == nil {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		io.WriteString(w, rep.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	flusher := w.(http.Flusher)
	flusher.Flush()
	for i, e := range rep.Events {
		if rep.Before != nil {
			rep.Before(i)
		}
		if r.Context().Err() != nil {
			return
		}
		if e.Name != "" {
			fmt.Fprintf(w, "event: %s\n", e.Name)
		}
		fmt.Fprintf(w, "data: %s\n\n", e.Data)
		flusher.Flush()
	}
	if rep.Cut {
		panic(http.ErrAbortHandler) // the connection is closed, mid-stream
	}
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Data is a stream of data-only events (OpenAI chat completions).
func Data(data ...string) []Event {
	out := make([]Event, len(data))
	for i, d := range data {
		out[i] = Event{Data: d}
	}
	return out
}

// Named is a stream of named events, given as name, data, name, data...
func Named(pairs ...string) []Event {
	out := make([]Event, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Event{Name: pairs[i], Data: pairs[i+1]})
	}
	return out
}

// ClockStart is when the fake clock of Sleeps starts.
var ClockStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Sleeps records the waits between attempts instead of sleeping, and is
// the clock: its time moves on by each wait.
type Sleeps struct {
	mu      sync.Mutex
	waits   []time.Duration
	elapsed time.Duration
}

// Sleep records d and returns at once (ctx.Err() when ctx ended).
func (s *Sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	s.elapsed += d
	return ctx.Err()
}

// Now is the fake clock.
func (s *Sleeps) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ClockStart.Add(s.elapsed)
}

// Waits returns the waits so far.
func (s *Sleeps) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}
