package openai

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

func TestRetryAfterNeverShortened(t *testing.T) {
	srv := newFakeServer(t,
		status(429, rateLimitError, "Retry-After", "2"),
		status(503, overloadError, "Retry-After-Ms", "1500"),
		status(429, rateLimitError, "Retry-After", "2"),
		ok(textCompletion))
	// The default jitter (0.2) drawn by the default source.
	p, s := newProvider(t, Options{BaseURL: srv.base(), Rand: rand.Float64})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	w := s.recorded()
	asked := []time.Duration{2 * time.Second, 1500 * time.Millisecond, 2 * time.Second}
	if len(w) != len(asked) {
		t.Fatalf("waits = %v, want %d", w, len(asked))
	}
	for i, a := range asked {
		if w[i] < a || w[i] > a*12/10 {
			t.Errorf("wait %d = %v for a Retry-After of %v; want it within [%v, %v]", i+1, w[i], a, a, a*12/10)
		}
	}
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
	// 7s lengthened by the jitter: 0.2 * the draw of 0.5.
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{7700 * time.Millisecond}) {
		t.Errorf("waits = %v, want [7.7s] (the Retry-After and 10%%)", w)
	}
	reqs := srv.recorded()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if string(reqs[0].raw) != string(reqs[1].raw) || len(reqs[1].raw) == 0 {
		t.Errorf("the retry sent a different body:\n%s\n%s", reqs[0].raw, reqs[1].raw)
	}
}

func TestRateLimitedUntilTheAttemptsRunOut(t *testing.T) {
	limited := status(429, rateLimitError, "Retry-After", "1")
	srv := newFakeServer(t, limited, limited, limited, limited, limited, ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base()})

	_, err := p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want a *shell.TransientError", err, err)
	}
	if errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("a rate limit is marked permanent: %v", err)
	}
	attempts := shell.DefaultModelRetry.Attempts
	if te.Attempts != attempts || te.RetryAfter != time.Second {
		t.Errorf("Attempts = %d, RetryAfter = %v; want %d and 1s", te.Attempts, te.RetryAfter, attempts)
	}
	want := fmt.Sprintf("gave up after %d attempts (last: status 429 Too Many Requests: Rate limit reached for gpt-4o-mini", attempts)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	if n, w := len(srv.recorded()), s.recorded(); n != attempts || len(w) != attempts-1 {
		t.Errorf("%d requests and waits %v; want %d requests and %d waits", n, w, attempts, attempts-1)
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
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 3 || te.RetryAfter != 0 || errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("err = %#v, want a TransientError after 3 attempts, with no Retry-After", err)
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

func TestRetryAfterBeyondMaxElapsed(t *testing.T) {
	srv := newFakeServer(t, status(429, rateLimitError, "Retry-After", "180"), ok(textCompletion))
	p, s := newProvider(t, Options{BaseURL: srv.base()})
	_, err := p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 1 || te.RetryAfter != 3*time.Minute {
		t.Fatalf("err = %#v, want a TransientError after 1 attempt asking for 3m", err)
	}
	want := "the server asked to wait 3m0s before retrying, beyond the retry time limit of 2m0s; gave up after 1 attempt (last: status 429"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	if len(srv.recorded()) != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", len(srv.recorded()), s.recorded())
	}

	// A wait longer than the longest backoff, within the time limit, is honoured.
	srv = newFakeServer(t, status(429, rateLimitError, "Retry-After", "60"), ok(textCompletion))
	p, s = newProvider(t, Options{BaseURL: srv.base(), Rand: func() float64 { return 0 }})
	if _, err := p.Complete(context.Background(), ask("hi")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{time.Minute}) {
		t.Errorf("waits = %v, want [1m]", w)
	}
}

func TestMaxElapsedStopsRetries(t *testing.T) {
	srv := newFakeServer(t, status(503, overloadError))
	policy := shell.RetryPolicy{Attempts: 100, Backoff: 10 * time.Second, MaxBackoff: 10 * time.Second, MaxElapsed: 35 * time.Second, Jitter: -1}
	p, s := newProvider(t, Options{BaseURL: srv.base(), Retry: policy})
	_, err := p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || te.Attempts != 5 {
		t.Fatalf("err = %#v, want a TransientError after 5 attempts", err)
	}
	want := "gave up after 5 attempts: the retry time limit of 35s has passed (last: status 503 Service Unavailable: The server is overloaded.)"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want it to contain %q", err, want)
	}
	// The last retry starts when the limit is reached, not later.
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 5 * time.Second}) {
		t.Errorf("waits = %v, want [10s 10s 10s 5s]", w)
	}
	if n := len(srv.recorded()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

func TestRefusedConnectionUntilTheServerStarts(t *testing.T) {
	addr := closedPort(t)
	policy := shell.RetryPolicy{Attempts: 10, Backoff: 5 * time.Second, MaxBackoff: 20 * time.Second, MaxElapsed: time.Minute}
	var srv *fakeServer
	s := &sleeps{onSleep: func(n int) {
		if n == 3 { // the server comes up during the third wait
			srv = listenFakeServer(t, addr, ok(textCompletion))
		}
	}}
	p, _ := newProvider(t, Options{BaseURL: "http://" + addr + "/v1", Retry: policy, Sleep: s.sleep, Now: s.now})
	got, err := p.Complete(context.Background(), ask("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got.Text != "Paris is the capital of France." {
		t.Errorf("reply = %+v", got)
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}) {
		t.Errorf("waits = %v, want [5s 10s 20s]", w)
	}
	if n := len(srv.recorded()); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}

	// A server that stays down: the time limit ends the retries.
	addr = closedPort(t)
	p, s = newProvider(t, Options{BaseURL: "http://" + addr + "/v1", Retry: policy})
	_, err = p.Complete(context.Background(), ask("hi"))
	var te *shell.TransientError
	if !errors.As(err, &te) || errors.Is(err, shell.ErrModelPermanent) {
		t.Fatalf("err = %#v, want a TransientError", err)
	}
	if !strings.Contains(err.Error(), "the retry time limit of 1m0s has passed") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want it to name the time limit and the refused connection", err)
	}
	if w := s.recorded(); !reflect.DeepEqual(w, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 20 * time.Second, 5 * time.Second}) || te.Attempts != 6 {
		t.Errorf("waits = %v, %d attempts; want [5s 10s 20s 20s 5s] and 6", w, te.Attempts)
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
