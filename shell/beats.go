package shell

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// beats renews the leases a Runner holds, every third of the lease's TTL:
// one goroutine and one timer for all its holdings, where a goroutine and
// a ticker each cost a server 1,000 of each with 1,000 runs held (the
// goroutines' stacks scanned at every collection). Each renewal runs on a goroutine of
// its own, so a store that hangs on one renewal holds up no other. The
// goroutine ends when no holding is left, and starts again with the next.
type beats struct {
	mu      sync.Mutex
	queue   beatQueue
	wake    chan struct{}
	running bool
}

// add queues h's next beat at due, unless h was released.
func (b *beats) add(h *holding, due time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.released {
		return
	}
	h.due = due
	heap.Push(&b.queue, h)
	switch {
	case !b.running:
		b.running = true
		if b.wake == nil {
			b.wake = make(chan struct{}, 1)
		}
		go b.loop()
	case b.queue[0] == h:
		select { // an earlier beat than the one the loop waits for
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// stop ends h's beats: none starts after stop returns, and one under way
// has ended.
func (b *beats) stop(h *holding) {
	b.mu.Lock()
	h.released = true
	if h.index >= 0 {
		heap.Remove(&b.queue, h.index)
		if len(b.queue) == 0 {
			select { // the loop ends now, not at the beat it waited for
			case b.wake <- struct{}{}:
			default:
			}
		}
	}
	b.mu.Unlock()
	h.beating.Lock() // a beat under way ends first
	h.beating.Unlock()
}

// loop starts each holding's beat when it is due.
func (b *beats) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		now := time.Now()
		var due []*holding
		for len(b.queue) > 0 && !b.queue[0].due.After(now) {
			due = append(due, heap.Pop(&b.queue).(*holding))
		}
		var wait time.Duration
		if len(b.queue) > 0 {
			wait = b.queue[0].due.Sub(now)
		}
		b.mu.Unlock()
		for _, h := range due {
			go h.beat()
		}
		if len(due) > 0 {
			continue
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-b.wake:
		}
	}
}

// beat renews h's lease and looks for a requested cancellation or a
// posted message, then queues the next beat a period after this one was
// due (at once when that has passed, as a ticker's pending tick would). A
// lost lease ends the beats.
func (h *holding) beat() {
	h.beating.Lock()
	defer h.beating.Unlock()
	h.r.beats.mu.Lock()
	released, due := h.released, h.due
	h.r.beats.mu.Unlock()
	if released {
		return
	}
	err := h.renew()
	if errors.Is(err, store.ErrLeaseLost) {
		return
	}
	if err == nil {
		h.watchCancel()
	}
	next := due.Add(h.r.opts.LeaseTTL / 3)
	if now := time.Now(); next.Before(now) {
		next = now
	}
	h.r.beats.add(h, next)
}

// beatQueue is the holdings waiting for their next beat, the earliest
// first (container/heap).
type beatQueue []*holding

func (q beatQueue) Len() int           { return len(q) }
func (q beatQueue) Less(i, j int) bool { return q[i].due.Before(q[j].due) }
func (q beatQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *beatQueue) Push(x any) {
	h := x.(*holding)
	h.index = len(*q)
	*q = append(*q, h)
}
func (q *beatQueue) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	h.index = -1
	*q = old[:len(old)-1]
	return h
}
