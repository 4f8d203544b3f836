package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter clamps absurd Retry-After values (they only need to exceed
// any sensible MaxBackoff).
const maxRetryAfter = 1000 * time.Hour

// maxReplyBytes bounds the reply body read into memory.
const maxReplyBytes = 64 << 20

// retryDoer is the go-openai HTTPDoer: it sends a request, re-sending it
// (req.GetBody) after a retryable failure, and reads the whole reply within
// the attempt's timeout. It returns a response only for a 2xx status; every
// other outcome is an error (*statusError, *gaveUpError, or ctx.Err()).
type retryDoer struct {
	client      *http.Client
	maxAttempts int
	base, max   time.Duration
	timeout     time.Duration
	sleep       func(ctx context.Context, d time.Duration) error
	now         func() time.Time
}

// attempt is the outcome of one try.
type attempt struct {
	status int
	header http.Header
	body   []byte
	err    error // transport error (retryable); status is 0
	final  error // an error retrying cannot fix
}

// Do implements go-openai's HTTPDoer.
func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	maxAttempts := d.maxAttempts
	if req.Body != nil && req.GetBody == nil {
		maxAttempts = 1 // the body cannot be sent twice
	}
	for n := 1; ; n++ {
		r := req
		if n > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("rewind the request body: %w", err)
			}
			r = req.Clone(ctx)
			r.Body = body
		}
		a, resp := d.try(r)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if a.final != nil {
			return nil, a.final
		}
		if a.err == nil && a.status >= 200 && a.status < 300 {
			return resp, nil
		}
		if a.err == nil && !retryableStatus(a.status) {
			return nil, &statusError{Status: a.status, Message: serverMessage(a.body)}
		}
		wait, asked := retryAfter(a.header, d.now())
		if !asked {
			wait = backoff(d.base, d.max, n)
		}
		if n >= maxAttempts || wait > d.max {
			g := &gaveUpError{Attempts: n, Status: a.status, Err: a.err, Message: serverMessage(a.body)}
			if n < maxAttempts {
				g.Wait, g.MaxBackoff = wait, d.max
			}
			return nil, g
		}
		if err := d.sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
	}
}

// try sends r once under the per-attempt timeout and reads the whole body.
func (d *retryDoer) try(r *http.Request) (attempt, *http.Response) {
	actx, cancel := context.WithTimeout(r.Context(), d.timeout)
	defer cancel()
	resp, err := d.client.Do(r.WithContext(actx))
	if err != nil {
		return attempt{err: d.attemptErr(actx, err)}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return attempt{err: d.attemptErr(actx, fmt.Errorf("read the reply: %w", err))}, nil
	}
	if len(body) > maxReplyBytes {
		return attempt{final: fmt.Errorf("the reply is larger than %d bytes", maxReplyBytes)}, nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return attempt{status: resp.StatusCode, header: resp.Header, body: body}, resp
}

// attemptErr replaces a per-attempt timeout by an error that does not match
// context.DeadlineExceeded, so callers do not take it for their own deadline.
func (d *retryDoer) attemptErr(actx context.Context, err error) error {
	if actx.Err() != nil {
		return fmt.Errorf("no complete reply within %v (the per-attempt timeout)", d.timeout)
	}
	return err
}

// retryableStatus reports whether a status may go away on its own.
func retryableStatus(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return true
	case status >= 500:
		return true
	}
	return false
}

// backoff is the wait before retry n (n >= 1): base * 2^(n-1), capped at max.
func backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n; i++ {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return min(d, max)
}

// retryAfter reads how long the server asked to wait: retry-after-ms, or
// Retry-After in seconds or as an HTTP date. asked is false without a usable
// header.
func retryAfter(h http.Header, now time.Time) (wait time.Duration, asked bool) {
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
