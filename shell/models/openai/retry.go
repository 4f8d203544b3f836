package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stepwise-agent/stepwise/shell"
)

// maxRetryAfter clamps absurd Retry-After values (they only need to exceed
// any sensible MaxElapsed).
const maxRetryAfter = 1000 * time.Hour

// maxReplyBytes bounds the reply body read into memory.
const maxReplyBytes = 64 << 20

// retryDoer is the go-openai HTTPDoer of a Provider, which only asks for
// chat completions: it sends a request, re-sending it (req.GetBody) after a
// transient failure as its policy allows, and reads the whole reply within
// the attempt's timeout. It returns a response only for a 2xx status whose
// body is a chat completion with at least one choice; every other outcome
// is an error (*statusError, *gaveUpError, or ctx.Err()).
type retryDoer struct {
	client  *http.Client
	policy  shell.RetryPolicy // with its defaults filled in
	timeout time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
	rand    func() float64
	now     func() time.Time
}

// attempt is the outcome of one try.
type attempt struct {
	status int
	header http.Header
	body   []byte
	err    error // a transport error or a reply that is no chat completion (retryable)
	final  error // an error retrying cannot fix
}

// Do implements go-openai's HTTPDoer.
func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	maxAttempts := d.policy.Attempts
	if req.Body != nil && req.GetBody == nil {
		maxAttempts = 1 // the body cannot be sent twice
	}
	start := d.now()
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
		g := &gaveUpError{Attempts: n, Status: a.status, Err: a.err, Message: serverMessage(a.body)}
		asked, hasAsked := retryAfter(a.header, d.now())
		if hasAsked {
			g.RetryAfter = asked
		}
		if n >= maxAttempts {
			return nil, g
		}
		wait, stop := d.next(n, asked, hasAsked, d.now().Sub(start))
		if stop != 0 {
			g.Stop, g.Limit = stop, d.policy.MaxElapsed
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

// stopReason says why the retries ended before the attempts ran out.
type stopReason int

const (
	stopElapsed stopReason = iota + 1 // MaxElapsed has passed
	stopAsked                         // the server asked for a wait beyond MaxElapsed
)

// next is the wait before retry n, elapsed after the first attempt started,
// or why no retry may start: no retry starts after MaxElapsed. The server's
// wait (asked, when hasAsked) replaces the backoff and is only ever
// lengthened by the jitter; a computed backoff is jittered both ways.
func (d *retryDoer) next(n int, asked time.Duration, hasAsked bool, elapsed time.Duration) (time.Duration, stopReason) {
	left := d.policy.MaxElapsed - elapsed
	switch {
	case left <= 0:
		return 0, stopElapsed
	case hasAsked && asked > left:
		return 0, stopAsked
	case hasAsked:
		wait := asked
		if d.policy.Jitter > 0 {
			wait += time.Duration(float64(asked) * d.policy.Jitter * d.rand())
		}
		return min(wait, left), 0
	}
	return min(d.policy.Wait(n, d.rand), left), 0
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
	a := attempt{status: resp.StatusCode, header: resp.Header, body: body}
	if a.status >= 200 && a.status < 300 {
		a.err = checkCompletion(body)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return a, resp
}

// checkCompletion reports a 2xx body that is not a chat completion with a
// choice: a proxy's error page, a truncated reply. Such a reply is retried
// like a 5xx.
func checkCompletion(body []byte) error {
	var c goopenai.ChatCompletionResponse
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("the reply is not a chat completion (%v)%s", err, quoted(body))
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("the reply has no choices%s", quoted(body))
	}
	return nil
}

// quoted is ": " and the server's message in body, or nothing.
func quoted(body []byte) string {
	if m := serverMessage(body); m != "" {
		return ": " + m
	}
	return ""
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
