package httpcall

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

func TestNextWait(t *testing.T) {
	policy := shell.RetryPolicy{Attempts: 10, Backoff: time.Second, MaxBackoff: 8 * time.Second, MaxElapsed: time.Minute, Jitter: 0.2}
	cases := []struct {
		name    string
		n       int
		asked   time.Duration // the server's Retry-After; -1: none
		elapsed time.Duration
		draw    float64
		wait    time.Duration
		stop    StopReason
	}{
		{"first backoff", 1, -1, 0, 0.5, time.Second, 0},
		{"doubled", 3, -1, 0, 0.5, 4 * time.Second, 0},
		{"capped", 9, -1, 0, 0.5, 8 * time.Second, 0},
		{"jitter down", 3, -1, 0, 0, 3200 * time.Millisecond, 0},
		{"jitter up", 3, -1, 0, 0.75, 4400 * time.Millisecond, 0},
		{"server's wait", 1, 7 * time.Second, 0, 0, 7 * time.Second, 0},
		{"server's wait lengthened", 1, 7 * time.Second, 0, 0.5, 7700 * time.Millisecond, 0},
		{"server's wait beyond the cap of backoffs", 1, 40 * time.Second, 0, 0, 40 * time.Second, 0},
		{"server's wait zero", 1, 0, 0, 0.9, 0, 0},
		{"backoff cut to the time left", 4, -1, 55 * time.Second, 0.5, 5 * time.Second, 0},
		{"server's wait cut to the time left, never below it", 1, 5 * time.Second, 55 * time.Second, 0.9, 5 * time.Second, 0},
		{"server's wait beyond the time left", 1, 6 * time.Second, 55 * time.Second, 0, 0, StopAsked},
		{"time limit reached", 1, -1, time.Minute, 0.5, 0, StopElapsed},
		{"time limit passed", 1, 2 * time.Second, 61 * time.Second, 0.5, 0, StopElapsed},
	}
	for _, c := range cases {
		d := New(Options{Policy: policy, Rand: func() float64 { return c.draw }})
		wait, stop := d.next(c.n, max(c.asked, 0), c.asked >= 0, c.elapsed)
		if wait != c.wait || stop != c.stop {
			t.Errorf("%s: next = %v, %d; want %v, %d", c.name, wait, stop, c.wait, c.stop)
		}
	}
}

func TestJitterStaysInBounds(t *testing.T) {
	policy := shell.RetryPolicy{Attempts: 10, Backoff: time.Second, MaxBackoff: 8 * time.Second, MaxElapsed: time.Hour, Jitter: 0.5}
	d := New(Options{Policy: policy, Rand: rand.Float64})
	for n := 1; n <= 5; n++ {
		nominal := policy.Wait(n, nil)
		lo, hi := nominal, nominal
		for range 2000 {
			w, _ := d.next(n, 0, false, 0)
			lo, hi = min(lo, w), max(hi, w)
		}
		if lo < nominal/2 || hi > nominal*3/2 {
			t.Errorf("retry %d: waits in [%v, %v], want them within [%v, %v]", n, lo, hi, nominal/2, nominal*3/2)
		}
		if lo > nominal*6/10 || hi < nominal*14/10 {
			t.Errorf("retry %d: waits in [%v, %v] around %v: the jitter hardly varies them", n, lo, hi, nominal)
		}
		asked := time.Duration(n) * time.Second
		lo, hi = time.Hour, 0
		for range 2000 {
			w, _ := d.next(n, asked, true, 0)
			lo, hi = min(lo, w), max(hi, w)
		}
		if lo < asked || hi > asked*3/2 || hi < asked*14/10 {
			t.Errorf("Retry-After %v: waits in [%v, %v], want them within [%v, %v], never shorter", asked, lo, hi, asked, asked*3/2)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header map[string]string
		wait   time.Duration
		asked  bool
	}{
		{"absent", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"HTTP date", map[string]string{"Retry-After": "Sat, 01 Mar 2025 12:00:10 GMT"}, 10 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": "Sat, 01 Mar 2025 11:00:00 GMT"}, 0, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"huge", map[string]string{"Retry-After": "99999999999999999999"}, maxRetryAfter, true},
		{"huge negative", map[string]string{"Retry-After": "-99999999999999999999"}, 0, false},
		{"clamped", map[string]string{"Retry-After": "999999999999"}, maxRetryAfter, true},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}, 1500 * time.Millisecond, true},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		wait, asked := RetryAfter(h, now)
		if wait != c.wait || asked != c.asked {
			t.Errorf("%s: RetryAfter = %v, %v; want %v, %v", c.name, wait, asked, c.wait, c.asked)
		}
	}
}

func TestServerMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"bad","type":"x"}}`: "bad",
		`{"error":"model not found"}`:            "model not found",
		`{"message":"nope"}`:                     "nope",
		"  plain\n text ":                        "plain text",
		"":                                       "",
	} {
		if got, _ := ServerMessage([]byte(body)); got != want {
			t.Errorf("ServerMessage(%q) = %q, want %q", body, got, want)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"3", "0", "-1", "Sat, 01 Mar 2025 12:00:10 GMT", "99999999999999999999", "1.5"} {
		f.Add(s, "")
		f.Add("", s)
	}
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{}
		h.Set("Retry-After", after)
		h.Set("Retry-After-Ms", afterMs)
		wait, asked := RetryAfter(h, now)
		if wait < 0 || wait > maxRetryAfter || (!asked && wait != 0) {
			t.Errorf("RetryAfter(%q, %q) = %v, %v", after, afterMs, wait, asked)
		}
	})
}
