package openai

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

func TestBackoff(t *testing.T) {
	base, max := 500*time.Millisecond, 30*time.Second
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := backoff(base, max, i+1); got != w {
			t.Errorf("backoff(retry %d) = %v, want %v", i+1, got, w)
		}
	}
	if got := backoff(base, max, 1000); got != max {
		t.Errorf("backoff(retry 1000) = %v, want the cap", got)
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
		wait, asked := retryAfter(h, now)
		if wait != c.wait || asked != c.asked {
			t.Errorf("%s: retryAfter = %v, %v; want %v, %v", c.name, wait, asked, c.wait, c.asked)
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
		if got := serverMessage([]byte(body)); got != want {
			t.Errorf("serverMessage(%q) = %q, want %q", body, got, want)
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
		wait, asked := retryAfter(h, now)
		if wait < 0 || wait > maxRetryAfter || (!asked && wait != 0) {
			t.Errorf("retryAfter(%q, %q) = %v, %v", after, afterMs, wait, asked)
		}
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	srv := newFakeServer(t, status(429, rateLimitError, "Retry-After", "7"), ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base()})

	got, err := p.Complete(context.Background(), ask("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Text == "" {
		t.Errorf("empty reply after the retry")
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{7 * time.Second}) {
		t.Errorf("waits = %v, want [7s] (the Retry-After)", w)
	}
	reqs := srv.recorded()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if string(reqs[0].raw) != string(reqs[1].raw) || len(reqs[1].raw) == 0 {
		t.Errorf("the retry sent a different body:\n%s\n%s", reqs[0].raw, reqs[1].raw)
	}
}

func TestServerErrorsBackOffExponentially(t *testing.T) {
	srv := newFakeServer(t, status(500, overloadError), status(502, "<html>Bad Gateway</html>"), ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base()})

	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Errorf("waits = %v, want [500ms 1s]", w)
	}
	if n := len(srv.recorded()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := newFakeServer(t, status(503, overloadError))
	p, s := newProvider(t, Options{BaseURL: srv.base(), MaxRetries: 2, BackoffBase: time.Second})

	_, err := p.Complete(context.Background(), ask("hi"))
	if err == nil {
		t.Fatal("Complete succeeded against a server that always answers 503")
	}
	for _, want := range []string{"gave up after 3 attempts", "503", "The server is overloaded."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("running out of retries is marked permanent: %v", err)
	}
	if n := len(srv.recorded()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{time.Second, 2 * time.Second}) {
		t.Errorf("waits = %v, want [1s 2s]", w)
	}
}

func TestNoRetries(t *testing.T) {
	srv := newFakeServer(t, status(503, overloadError))
	p, s := newProvider(t, Options{BaseURL: srv.base(), MaxRetries: -1})
	_, err := p.Complete(context.Background(), ask("hi"))
	if err == nil || !strings.Contains(err.Error(), "gave up after 1 attempt ") {
		t.Errorf("err = %v, want it to give up after 1 attempt", err)
	}
	if len(srv.recorded()) != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", len(srv.recorded()), s.recorded())
	}
}

func TestRetryAfterLongerThanMaxBackoff(t *testing.T) {
	srv := newFakeServer(t, status(429, rateLimitError, "Retry-After", "120"), ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base()})
	_, err := p.Complete(context.Background(), ask("hi"))
	if err == nil || !strings.Contains(err.Error(), "asked to wait 2m0s") || !strings.Contains(err.Error(), "429") {
		t.Errorf("err = %v, want it to say the server asked to wait 2m0s (429)", err)
	}
	if len(srv.recorded()) != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", len(srv.recorded()), s.recorded())
	}
}

func TestContextCancelledDuringBackoff(t *testing.T) {
	srv := newFakeServer(t, status(503, overloadError), ok(textCompletion))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits int
	p, _ := newProvider(t, Options{BaseURL: srv.base(), Sleep: func(ctx context.Context, d time.Duration) error {
		waits++
		cancel() // the run is interrupted while the provider waits
		<-ctx.Done()
		return ctx.Err()
	}})

	_, err := p.Complete(ctx, ask("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("a cancellation is marked permanent: %v", err)
	}
	if n := len(srv.recorded()); n != 1 || waits != 1 {
		t.Errorf("%d requests, %d waits; want 1 and 1", n, waits)
	}
}

func TestDefaultSleepHonoursContext(t *testing.T) {
	srv := newFakeServer(t, status(503, overloadError), ok(textCompletion))
	p, err := New(Options{BaseURL: srv.base(), Model: "m", BackoffBase: time.Hour, MaxBackoff: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Complete(ctx, ask("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Complete took %v after its context ended", d)
	}
}

func TestContextCancelledInFlight(t *testing.T) {
	srv := newFakeServer(t, fakeReply{hang: true})
	p, s := newProvider(t, Options{BaseURL: srv.base()})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.recorded()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := p.Complete(ctx, ask("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(s.recorded()) != 0 {
		t.Errorf("waited %v after the context ended", s.recorded())
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	srv := newFakeServer(t, fakeReply{hang: true}, ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base(), Timeout: 50 * time.Millisecond})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := len(srv.recorded()); n != 2 || len(s.recorded()) != 1 {
		t.Errorf("%d requests, waits %v; want 2 requests and 1 wait", n, s.recorded())
	}

	srv = newFakeServer(t, fakeReply{hang: true})
	p, _ = newProvider(t, Options{BaseURL: srv.base(), Timeout: 20 * time.Millisecond, MaxRetries: 1})
	_, err := p.Complete(context.Background(), ask("hi"))
	if err == nil || !strings.Contains(err.Error(), "per-attempt timeout") {
		t.Fatalf("err = %v, want a per-attempt timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("an attempt timeout looks like the caller's deadline: %v", err)
	}
}

// flakyTransport fails the first n round trips as a refused connection would.
type flakyTransport struct {
	n     int32
	calls atomic.Int32
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f.calls.Add(1) <= f.n {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestTransportErrorsAreRetried(t *testing.T) {
	srv := newFakeServer(t, ok(textCompletion))
	ft := &flakyTransport{n: 2}
	p, s := newProvider(t, Options{BaseURL: srv.base(), HTTPClient: &http.Client{Transport: ft}})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if ft.calls.Load() != 3 || len(srv.recorded()) != 1 {
		t.Errorf("%d round trips, %d reached the server; want 3 and 1", ft.calls.Load(), len(srv.recorded()))
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Errorf("waits = %v", w)
	}

	ft = &flakyTransport{n: 100}
	p, _ = newProvider(t, Options{BaseURL: srv.base(), HTTPClient: &http.Client{Transport: ft}, MaxRetries: 1})
	_, err := p.Complete(context.Background(), ask("hi"))
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want it to give up after 2 attempts naming the refused connection", err)
	}
}
