package httpcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stepwise-agent/stepwise/shell"
)

// Defaults of Options.
const (
	DefaultTimeout = 60 * time.Second
	// DefaultMaxReply bounds a reply read whole (not an event stream):
	// the default state limit (core.DefaultLimits().MaxStateBytes), which
	// a reply must fit in; a model's longest reply is a small part of it.
	DefaultMaxReply = 8 << 20
	// DefaultMaxStream bounds an event stream as it arrives: each event
	// wraps a few characters in a few hundred bytes of JSON, so a long
	// reply takes several times its size on the wire. What a stream
	// assembles is bounded too (see streamed.Deltas).
	DefaultMaxStream = 64 << 20
	// maxRetryAfter clamps absurd Retry-After values (they only need to
	// exceed any sensible MaxElapsed).
	maxRetryAfter = 1000 * time.Hour
	// maxErrorBody bounds what is read of a reply that is not 2xx.
	maxErrorBody = 64 << 10
)

// Options configure a Client. The zero value of a field means its default.
type Options struct {
	// HTTP sends the requests (default: a new http.Client).
	HTTP *http.Client
	// Policy says how transient failures are retried; its zero fields are
	// shell.DefaultModelRetry's.
	Policy shell.RetryPolicy
	// Timeout is how long an attempt may receive nothing: no reply to the
	// request, or no data within a reply (default DefaultTimeout).
	Timeout time.Duration
	// MaxReply bounds the size in bytes of a reply read whole (default
	// DefaultMaxReply); MaxStream that of an event stream (default
	// DefaultMaxStream). A reply that declares a larger Content-Length is
	// refused before any of it is read.
	MaxReply, MaxStream int64
	// Check vets a 2xx reply that is not an event stream; its error makes
	// the attempt fail, transiently (a proxy's error page, a cut reply).
	Check func(body []byte) error
	// Sleep waits between attempts; it must return ctx.Err() when ctx
	// ends first (default: a timer). Tests record the waits with it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand draws the jitter, uniformly from [0, 1) (default math/rand/v2).
	Rand func() float64
	// Now is the clock MaxElapsed is measured by (default time.Now).
	Now func() time.Time
}

// Client makes a provider's calls. It is safe for concurrent use.
type Client struct {
	o Options
}

// New returns a Client; opts.Policy must be valid.
func New(opts Options) *Client {
	o := opts
	if o.HTTP == nil {
		o.HTTP = &http.Client{}
	}
	o.Policy = o.Policy.WithDefaults(shell.DefaultModelRetry)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxReply <= 0 {
		o.MaxReply = DefaultMaxReply
	}
	if o.MaxStream <= 0 {
		o.MaxStream = DefaultMaxStream
	}
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Client{o: o}
}

// Policy is the retry policy the client follows, defaults filled in.
func (c *Client) Policy() shell.RetryPolicy { return c.o.Policy }

// attempt is what one attempt's Do saw; it travels in the attempt's
// context.
type attempt struct {
	mu      sync.Mutex
	sent    bool
	plain   []byte
	tooBig  bool
	limit   int64 // the limit the reply went past, once tooBig
	timer   *time.Timer
	timeout time.Duration
}

type attemptKey struct{}

func attemptOf(ctx context.Context) *attempt {
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// tooLarge reports whether the reply went past its limit, and which.
func (a *attempt) tooLarge() (bool, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tooBig, a.limit
}

// over marks the reply as past limit.
func (a *attempt) over(limit int64) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.tooBig, a.limit = true, limit
	a.mu.Unlock()
}

func (a *attempt) wasSent() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}

// touch restarts the idle timer: something arrived.
func (a *attempt) touch() {
	if a != nil && a.timer != nil {
		a.timer.Reset(a.timeout)
	}
}

// Plain returns the body of the 2xx reply an attempt got that was not an
// event stream, read whole and vetted by Check; nil when the reply was a
// stream. ctx is the context Call gave the attempt.
func Plain(ctx context.Context) []byte {
	a := attemptOf(ctx)
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.plain
}

// Do sends one attempt. A reply that is not 2xx is a *StatusError; an
// event stream is returned as it arrives; any other 2xx reply is read
// whole and vetted (see Plain).
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	if k := capturing(req.Context()); k != nil {
		// A rendered attempt (Base.Render): kept, not sent.
		return nil, k.keep(req)
	}
	a := attemptOf(req.Context())
	if a != nil {
		a.mu.Lock()
		a.sent = true
		a.mu.Unlock()
	}
	resp, err := c.o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	a.touch()
	limit := c.o.MaxReply
	if isEventStream(resp.Header) {
		limit = c.o.MaxStream
	}
	body := &watched{rc: resp.Body, a: a, left: limit, limit: limit}
	if ok := resp.StatusCode >= 200 && resp.StatusCode <= 299; ok && resp.ContentLength > limit {
		resp.Body.Close()
		a.over(limit)
		return nil, errTooBig
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
		body.Close()
		msg, typ := ServerMessage(b)
		return nil, &StatusError{Status: resp.StatusCode, Header: resp.Header, Message: msg, Type: typ}
	}
	if isEventStream(resp.Header) {
		resp.Body = body
		return resp, nil
	}
	b, err := io.ReadAll(body)
	body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the reply: %w", err)
	}
	if c.o.Check != nil {
		if err := c.o.Check(b); err != nil {
			return nil, &BadReplyError{Err: err}
		}
	}
	if a != nil {
		a.mu.Lock()
		a.plain = b
		a.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	return resp, nil
}

func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// watched is a reply body that restarts its attempt's idle timer whenever
// data arrives, and refuses to grow past the size limit.
type watched struct {
	rc          io.ReadCloser
	a           *attempt
	left, limit int64
}

var errTooBig = errors.New("the reply is too large")

func (w *watched) Read(p []byte) (int, error) {
	if w.left <= 0 {
		w.a.over(w.limit)
		return 0, errTooBig
	}
	if int64(len(p)) > w.left {
		p = p[:w.left]
	}
	n, err := w.rc.Read(p)
	w.left -= int64(n)
	if n > 0 {
		w.a.touch()
	}
	return n, err
}

func (w *watched) Close() error { return w.rc.Close() }

// Call runs attempt until it succeeds, fails permanently, or the retries
// of a transient failure run out (see the package doc). attempt must make
// its requests with the context it is given (through this client's Do),
// and read the whole reply before it returns. onRetry may be nil.
func (c *Client) Call(ctx context.Context, onRetry func(shell.ModelRetry), fn func(ctx context.Context) error) error {
	p := c.o.Policy
	start := c.o.Now()
	for n := 1; ; n++ {
		a, idle, err := c.try(ctx, fn)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			return nil
		}
		if idle {
			err = fmt.Errorf("received nothing for %v (the per-attempt timeout)", c.o.Timeout)
		}
		if big, limit := a.tooLarge(); big {
			return Permanentf("the reply is larger than %d bytes (the limit of a model's reply)", limit)
		}
		var se *StatusError
		isStatus := errors.As(err, &se)
		switch {
		case errors.Is(err, shell.ErrModelPermanent):
			return err
		case isStatus && !se.Retryable():
			return se
		case !isStatus && !a.wasSent() && !idle:
			return &PermanentError{Err: err}
		}
		g := &GaveUpError{Attempts: n, Err: err}
		var asked time.Duration
		var hasAsked bool
		if isStatus {
			g.Status, g.Message, g.Err = se.Status, se.Message, nil
			asked, hasAsked = RetryAfter(se.Header, c.o.Now())
			if hasAsked {
				g.RetryAfter = asked
			}
		}
		if n >= p.Attempts {
			return g
		}
		wait, stop := c.next(n, asked, hasAsked, c.o.Now().Sub(start))
		if stop != 0 {
			g.Stop, g.Limit = stop, p.MaxElapsed
			return g
		}
		if onRetry != nil {
			reason := err.Error()
			if isStatus {
				reason = se.Error()
			}
			onRetry(shell.ModelRetry{Attempt: n, Wait: wait, Reason: reason})
		}
		if err := c.o.Sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
	}
}

// try runs one attempt under its idle timer.
func (c *Client) try(ctx context.Context, fn func(ctx context.Context) error) (a *attempt, idle bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	a = &attempt{timeout: c.o.Timeout}
	a.timer = time.AfterFunc(c.o.Timeout, func() { cancel(errIdle) })
	err = fn(context.WithValue(actx, attemptKey{}, a))
	a.timer.Stop()
	return a, err != nil && errors.Is(context.Cause(actx), errIdle), err
}

// next is the wait before retry n, elapsed after the first attempt started,
// or why no retry may start: no retry starts after MaxElapsed. The server's
// wait (asked, when hasAsked) replaces the backoff and is only ever
// lengthened by the jitter; a computed backoff is jittered both ways.
func (c *Client) next(n int, asked time.Duration, hasAsked bool, elapsed time.Duration) (time.Duration, StopReason) {
	p := c.o.Policy
	left := p.MaxElapsed - elapsed
	switch {
	case left <= 0:
		return 0, StopElapsed
	case hasAsked && asked > left:
		return 0, StopAsked
	case hasAsked:
		wait := asked
		if p.Jitter > 0 {
			wait += time.Duration(float64(asked) * p.Jitter * c.o.Rand())
		}
		return min(wait, left), 0
	}
	return min(p.Wait(n, c.o.Rand), left), 0
}

// RetryAfter reads how long the server asked to wait: retry-after-ms, or
// Retry-After in seconds or as an HTTP date. asked is false without a
// usable header.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, asked bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(min(ms, maxRetryAfter.Seconds()*1000) * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	s, err := strconv.Atoi(v)
	switch {
	case err == nil && s >= 0:
		return time.Duration(min(s, int(maxRetryAfter/time.Second))) * time.Second, true
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
		return maxRetryAfter, true
	case err == nil || errors.Is(err, strconv.ErrRange):
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
