package shell

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate bounds how often a tool runs: at most N calls in any window of Per,
// counted across every run of the agent in this process (an API's quota
// belongs to the process's key, not to one run). A call past it waits for
// a slot rather than failing; the wait is told to the observer (the CLI's
// progress, serve's event stream) and changes nothing stored, so a replay,
// which feeds the recorded results, neither waits nor differs.
type Rate struct {
	N   int
	Per time.Duration
}

// String is the rate as an agent file writes it: "30/min".
func (r Rate) String() string {
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "min", time.Hour: "h"}[r.Per]
	if unit == "" {
		unit = r.Per.String()
	}
	return fmt.Sprintf("%d/%s", r.N, unit)
}

// ParseRate reads "N/s", "N/min" or "N/h" (also "N/second", "N/minute",
// "N/hour", "N/sec"), N a positive whole number.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err != nil || count < 1 {
		return Rate{}, fmt.Errorf("rate %q: want N/s, N/min or N/h with N a positive whole number", s)
	}
	per, known := map[string]time.Duration{"s": time.Second, "sec": time.Second, "second": time.Second,
		"min": time.Minute, "minute": time.Minute, "h": time.Hour, "hour": time.Hour}[strings.TrimSpace(unit)]
	if !known {
		return Rate{}, fmt.Errorf("rate %q: the unit is s, min or h", s)
	}
	return Rate{N: count, Per: per}, nil
}

// limiter holds the start times of the last N calls of one tool.
type limiter struct {
	mu    sync.Mutex
	rate  Rate
	times []time.Time // ring of reserved start times, oldest at next
	next  int
}

// limiters are the process's limiters, by agent, tool and rate.
var limiters sync.Map

func limiterFor(agent, tool string, r Rate) *limiter {
	key := agent + "\x00" + tool + "\x00" + r.String()
	if l, ok := limiters.Load(key); ok {
		return l.(*limiter)
	}
	l, _ := limiters.LoadOrStore(key, &limiter{rate: r, times: make([]time.Time, 0, r.N)})
	return l.(*limiter)
}

// reserve takes the next slot and returns how long to wait for it: none
// while fewer than N calls started in the last Per, else until the oldest
// of the last N is Per old.
func (l *limiter) reserve(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := now
	if len(l.times) == l.rate.N {
		if t := l.times[l.next].Add(l.rate.Per); t.After(start) {
			start = t
		}
		l.times[l.next] = start
		l.next = (l.next + 1) % l.rate.N
	} else {
		l.times = append(l.times, start)
	}
	return start.Sub(now)
}

// waitForRate waits for tool's slot under its rate, telling the observer
// when it must wait; it returns early with ctx's error.
func (r *Runner) waitForRate(ctx context.Context, ag *Agent, cur *cursor, tool, callID string, rate *Rate) error {
	if rate == nil {
		return nil
	}
	wait := limiterFor(ag.Config.Name, tool, *rate).reserve(time.Now())
	if wait <= 0 {
		return nil
	}
	r.emit(func() Event {
		return Event{RunID: cur.id, Seq: cur.seq, Kind: "rate", Duration: wait,
			Text: fmt.Sprintf("%s#%s waits %s for its rate (%s)", tool, callID, wait.Round(time.Millisecond), rate)}
	})
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
