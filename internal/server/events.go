package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

// hub tells the event streams of a run that it changed: it is the runner's
// observer (every step of the runs this server drives) and hears of the
// changes requests make. Streams also poll the store, for the steps other
// servers write. It also hands the streams the live events of a model
// call in flight ("calling", "delta", model "retry"), which are never
// stored: a stream only gets those that happen while it is connected,
// except that a stream that connects during a call gets its "calling"
// event, so that it knows a call is in flight.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*subscriber]bool
	// calling holds the "calling" event of each run whose model call is in
	// flight, until the run's next event that is not live.
	calling map[string]shell.Event
	// drives holds, for each run a worker here drives, the number of its
	// drive (began), so that the end of a drive that another took over
	// meanwhile (the run ended, a message came, another worker took it)
	// leaves the new drive's "calling" event alone.
	drives map[string]uint64
	last   uint64 // the number of the last drive begun
	closed chan struct{}
	once   sync.Once
}

// subscriber is one stream of a run: woken when the run changed, with the
// live events that came since it last looked.
type subscriber struct {
	wake chan struct{}
	// wantsLive is set for the event streams, which take live events.
	wantsLive bool
	mu        sync.Mutex
	live      []shell.Event
}

// maxLive bounds the live events waiting for a slow stream; past it they
// are dropped (the step that follows carries the whole reply).
const maxLive = 4096

func newHub() *hub {
	return &hub{subs: map[string]map[*subscriber]bool{}, calling: map[string]shell.Event{}, drives: map[string]uint64{},
		closed: make(chan struct{})}
}

// Event implements shell.Observer.
func (h *hub) Event(e shell.Event) {
	if !isLive(e) {
		// The call, if any, is over, unless this is a step before it:
		// the last event of a drive that ended as another began.
		h.mu.Lock()
		defer h.mu.Unlock()
		if c, ok := h.calling[e.RunID]; ok && e.Seq >= c.Seq {
			delete(h.calling, e.RunID)
		}
		h.pokeLocked(e.RunID)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Kind == "calling" {
		h.calling[e.RunID] = e
	}
	for sub := range h.subs[e.RunID] {
		if !sub.wantsLive {
			continue
		}
		sub.mu.Lock()
		if len(sub.live) < maxLive {
			sub.live = append(sub.live, e)
		}
		sub.mu.Unlock()
		sub.poke()
	}
}

// isLive reports an event of a model call in flight, or a running tool's
// progress (MCP progress, a command's output lines as they come).
func isLive(e shell.Event) bool {
	return e.Kind == "calling" || e.Kind == "delta" || (e.Kind == "retry" && e.Index > 0) || e.Kind == "progress"
}

func (sub *subscriber) poke() {
	select {
	case sub.wake <- struct{}{}:
	default:
	}
}

// takeLive returns the live events that came since the last call.
func (sub *subscriber) takeLive() []shell.Event {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	out := sub.live
	sub.live = nil
	return out
}

// putBack returns live events not written yet, ahead of newer ones.
func (sub *subscriber) putBack(events []shell.Event) {
	if len(events) == 0 {
		return
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	sub.live = append(events, sub.live...)
}

// notify wakes the streams of a run.
func (h *hub) notify(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pokeLocked(runID)
}

// began records that a worker here begins to drive the run, and returns
// the drive's number for ended.
func (h *hub) began(runID string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last++
	h.drives[runID] = h.last
	return h.last
}

// ended tells the streams of a run that drive n of it ended: no model call
// of it is in flight any more, unless another drive of the run began since
// (then the call in flight, if any, is that one's).
func (h *hub) ended(runID string, n uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drives[runID] == n {
		delete(h.drives, runID)
		delete(h.calling, runID)
	}
	h.pokeLocked(runID)
}

// pokeLocked wakes the streams of a run; h.mu is held.
func (h *hub) pokeLocked(runID string) {
	for sub := range h.subs[runID] {
		sub.poke()
	}
}

// subscribe returns a channel woken when the run changes.
func (h *hub) subscribe(runID string) (chan struct{}, func()) {
	sub, done := h.add(runID, false)
	return sub.wake, done
}

// subscribeLive is subscribe for an event stream, which takes the live
// events of the run's model calls too.
func (h *hub) subscribeLive(runID string) (*subscriber, func()) {
	return h.add(runID, true)
}

func (h *hub) add(runID string, live bool) (*subscriber, func()) {
	sub := &subscriber{wake: make(chan struct{}, 1), wantsLive: live}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.calling[runID]; ok && live {
		sub.live = []shell.Event{e}
	}
	if h.subs[runID] == nil {
		h.subs[runID] = map[*subscriber]bool{}
	}
	h.subs[runID][sub] = true
	return sub, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[runID], sub)
		if len(h.subs[runID]) == 0 {
			delete(h.subs, runID)
		}
	}
}

// close ends every stream (the server is shutting down).
func (h *hub) close() { h.once.Do(func() { close(h.closed) }) }

// lastEventID reads where a client's stream stopped: the seq of the last
// step it got ("7", or "7.3" for the third delta of step 7), -1 for none.
func lastEventID(r *http.Request) (int, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return -1, nil
	}
	seq, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(seq)
	if err != nil || n < -1 {
		return 0, errorf(http.StatusBadRequest, codeBadRequest, "Last-Event-ID %q is not a step number", v)
	}
	return n, nil
}

// stepsAfter reads the steps of run id after seq after, each with the
// messages it added.
func (s *Server) stepsAfter(ctx context.Context, id string, after, limit int) ([]apiStep, error) {
	var out []apiStep
	prev := 0
	from := max(after, 0)
	errFull := errors.New("full")
	err := s.cfg.Store.StepsFrom(ctx, id, from, func(rec store.StepRecord) error {
		if rec.Seq <= after {
			prev = len(rec.State.Messages)
			return nil
		}
		out = append(out, stepOf(rec, prev))
		prev = len(rec.State.Messages)
		if limit > 0 && len(out) >= limit {
			return errFull
		}
		return nil
	})
	if errors.Is(err, errFull) {
		err = nil
	}
	return out, err
}

// events streams a run: Server-Sent Events of its steps ("step", id the
// step's seq; event N carries step N as /steps lists it: the result it
// folded in, which answers step N-1's request, and the action it decided),
// the run as GET /v1/runs/{id} shows it ("run", whenever it
// changes: status, holder, pending calls, counters),
// and "end" once it ended and every step was sent. A client that
// reconnects with Last-Event-ID gets the steps after it, none twice.
//
// A step whose result is a user message (a message sent to the run,
// folded in) comes after a "message" event ({"seq", "content"}) with no
// id of its own: a client that drops off between the two gets the message
// again with its step, so none is missed (data.seq tells a repeat).
//
// While a model call of a run this server drives is in flight, its live
// events follow the step that asked for it (seq SEQ): "calling" when it
// starts, then "delta" for each piece of the reply ({"seq", "n", "part",
// "text"}) and "retry" for each retry, ids "SEQ.N" (N from 1 within the
// call). They are not stored: the step after carries the whole reply. A
// client that reconnects with Last-Event-ID "SEQ.N" (read as SEQ) gets
// the steps after SEQ, none twice, and the live events from then on, not
// those it missed. A client that connects during a call gets its
// "calling" event first.
//
// With ?wait=DURATION (and no text/event-stream in Accept) it long-polls
// instead: the steps after ?after=SEQ, as JSON, at once when there are
// some, else as soon as one comes or the wait passes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ri, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if wait := r.URL.Query().Get("wait"); wait != "" && !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		s.longPoll(w, r, id, after, wait)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, errors.New("streaming is not supported"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sub, done := s.hub.subscribeLive(id)
	defer done()
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	var lastRun string
	for {
		steps, err := s.stepsAfter(r.Context(), id, after, 500)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonText(map[string]string{"message": err.Error()}))
			flusher.Flush()
			return
		}
		// Taken after the steps were read: a call's live events come
		// before the step with its reply, so those of a call whose reply
		// was just read are here too, and go out before that step.
		live := writeLive(w, sub.takeLive(), after)
		for _, st := range steps {
			if m, ok := messageOf(st); ok {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", jsonText(m))
			}
			fmt.Fprintf(w, "id: %d\nevent: step\ndata: %s\n\n", st.Seq, jsonText(st))
			after = st.Seq
		}
		sub.putBack(writeLive(w, live, after))
		if ri, err = s.cfg.Store.Run(r.Context(), id); err == nil {
			full, err := s.runJSONOf(r.Context(), ri)
			if err != nil {
				full = s.runOf(ri, time.Now())
			}
			if run := jsonText(full); run != lastRun {
				fmt.Fprintf(w, "event: run\ndata: %s\n\n", run)
				lastRun = run
			}
			if ri.Status.Ended() && after >= ri.LastSeq && len(steps) < 500 {
				fmt.Fprintf(w, "event: end\ndata: {}\n\n")
				flusher.Flush()
				return
			}
		}
		flusher.Flush()
		if len(steps) == 500 {
			continue // more to send at once
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.closed:
			return
		case <-sub.wake:
		case <-poll.C:
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			flusher.Flush()
		}
	}
}

// longPoll answers ?wait= requests: {"steps": [...], "run": {...}}.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, id string, after int, waitText string) {
	wait, err := time.ParseDuration(waitText)
	if err != nil || wait < 0 || wait > 5*time.Minute {
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "wait %q: want a duration up to 5m, like 30s", waitText))
		return
	}
	wake, done := s.hub.subscribe(id)
	defer done()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(s.cfg.Poll)
	defer poll.Stop()
	for {
		steps, err := s.stepsAfter(r.Context(), id, after, 500)
		if err != nil {
			writeError(w, err)
			return
		}
		ri, err := s.cfg.Store.Run(r.Context(), id)
		if err != nil {
			writeError(w, err)
			return
		}
		if len(steps) > 0 || ri.Status.Ended() {
			writeJSON(w, http.StatusOK, map[string]any{"steps": nonNilSteps(steps), "run": s.runOf(ri, time.Now())})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.closed:
			writeJSON(w, http.StatusOK, map[string]any{"steps": []apiStep{}, "run": s.runOf(ri, time.Now())})
			return
		case <-deadline.C:
			writeJSON(w, http.StatusOK, map[string]any{"steps": []apiStep{}, "run": s.runOf(ri, time.Now())})
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// messageEvent is the data of a "message" event: the user's message that
// step Seq folded into the run (its result is a core.UserMessage).
type messageEvent struct {
	Seq     int    `json:"seq"`
	Content string `json:"content"`
}

// messageOf is the message event of a step that folded a user message in.
func messageOf(st apiStep) (messageEvent, bool) {
	if st.Result == nil {
		return messageEvent{}, false
	}
	m, ok := st.Result.Data.(core.UserMessage)
	return messageEvent{Seq: st.Seq, Content: m.Content}, ok
}

// liveEvent is the data of a live event.
type liveEvent struct {
	Seq  int    `json:"seq"`
	N    int    `json:"n,omitempty"`
	Part string `json:"part,omitempty"`
	Text string `json:"text"`
	// Started is when a "calling" event's call began.
	Started *time.Time `json:"started,omitempty"`
}

// writeLive writes the live events of the model call that the stream's
// last step (after) asked for, and returns those of later calls, which
// wait until their step was sent; those of earlier calls are stale (the
// step with their reply is out) and dropped.
func writeLive(w http.ResponseWriter, events []shell.Event, after int) (later []shell.Event) {
	for _, e := range events {
		switch {
		case e.Seq > after:
			later = append(later, e)
			continue
		case e.Seq < after:
			continue
		}
		le := liveEvent{Seq: e.Seq, N: e.Index, Part: e.Part, Text: e.Text}
		if e.Kind == "calling" && !e.Start.IsZero() {
			started := e.Start.UTC()
			le.Started = &started
		}
		data := jsonText(le)
		if e.Index > 0 {
			fmt.Fprintf(w, "id: %d.%d\nevent: %s\ndata: %s\n\n", e.Seq, e.Index, e.Kind, data)
		} else {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, data)
		}
	}
	return later
}

func nonNilSteps(s []apiStep) []apiStep {
	if s == nil {
		return []apiStep{}
	}
	return s
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
