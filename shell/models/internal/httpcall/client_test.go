package httpcall

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/internal/modeltest"
	"github.com/stepwise-agent/stepwise/shell"
)

// get is an attempt that reads the whole reply of a GET through c.
func get(c *Client, url string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
}

func newClient(o Options) (*Client, *modeltest.Sleeps) {
	s := &modeltest.Sleeps{}
	o.Sleep, o.Now, o.Rand = s.Sleep, s.Now, func() float64 { return 0.5 }
	return New(o), s
}

// TestCallClassifiesFailures: what is retried, what is not, and what the
// caller is told before each wait.
func TestCallClassifiesFailures(t *testing.T) {
	// A failure before anything was sent is permanent: the request
	// itself is wrong.
	c, s := newClient(Options{})
	err := c.Call(context.Background(), nil, func(context.Context) error { return errors.New("cannot encode the request") })
	if !errors.Is(err, shell.ErrModelPermanent) || len(s.Waits()) != 0 {
		t.Errorf("unsent: err = %v after waits %v", err, s.Waits())
	}

	// A reply larger than the limit is permanent, streamed or not.
	for _, rep := range []modeltest.Reply{
		{Body: strings.Repeat("x", 2000)},
		{Events: modeltest.Data(strings.Repeat("y", 2000))},
	} {
		srv := modeltest.New(t, rep)
		c, _ := newClient(Options{MaxReply: 1000, MaxStream: 1000})
		err := c.Call(context.Background(), nil, get(c, srv.URL))
		if !errors.Is(err, shell.ErrModelPermanent) || !strings.Contains(err.Error(), "larger than 1000 bytes") || len(srv.Requests()) != 1 {
			t.Errorf("too large: err = %v after %d requests", err, len(srv.Requests()))
		}
	}

	// A 503, then a cut stream, then a whole reply: two retries, each told
	// before its wait with the wait the clock then sleeps.
	srv := modeltest.New(t,
		modeltest.Reply{Status: 503, Body: `{"error":{"message":"busy","type":"server_error"}}`},
		modeltest.Reply{Events: modeltest.Data("a", "b"), Cut: true},
		modeltest.Reply{Body: `{}`})
	c, s = newClient(Options{})
	var told []shell.ModelRetry
	if err := c.Call(context.Background(), func(r shell.ModelRetry) { told = append(told, r) }, get(c, srv.URL)); err != nil {
		t.Fatal(err)
	}
	waits := s.Waits()
	if len(told) != 2 || len(waits) != 2 || told[0].Wait != waits[0] || told[1].Wait != waits[1] ||
		told[0].Reason != "status 503 Service Unavailable: busy" || !strings.Contains(told[1].Reason, "unexpected EOF") || told[1].Attempt != 2 {
		t.Errorf("told %+v, waits %v", told, waits)
	}

	// A 400 is the caller's to explain, never retried.
	srv = modeltest.New(t, modeltest.Reply{Status: 400, Body: `{"error":{"message":"bad","code":"invalid_value"}}`})
	c, s = newClient(Options{})
	err = c.Call(context.Background(), nil, get(c, srv.URL))
	var se *StatusError
	if !errors.As(err, &se) || se.Status != 400 || se.Message != "bad" || se.Type != "invalid_value" || len(s.Waits()) != 0 {
		t.Errorf("400: err = %#v", err)
	}
}

// TestCallEndsWithItsContext: a context cancelled while a stream is being
// read ends the call at once with the context's error, no retry.
func TestCallEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := modeltest.New(t, modeltest.Reply{Events: modeltest.Data("a", "b", "c"), Before: func(i int) {
		if i == 1 {
			cancel()
		}
	}})
	c, s := newClient(Options{})
	retried := false
	err := c.Call(ctx, func(shell.ModelRetry) { retried = true }, get(c, srv.URL))
	if !errors.Is(err, context.Canceled) || retried || len(s.Waits()) != 0 {
		t.Errorf("err = %v, retried %v, waits %v", err, retried, s.Waits())
	}
}
