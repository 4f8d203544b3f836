package httpcall

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

func TestOpenChecksTheCommonOptions(t *testing.T) {
	_, _, err := Open(Setup{Name: "p", BaseURL: "localhost:1", Timeout: -time.Second, MaxTokens: -1,
		Retry: shell.RetryPolicy{Jitter: 2}, Problems: []string{"its own problem"}})
	for _, want := range []string{"p: model is empty", "its own problem", `base URL "localhost:1" is not an http or https URL`,
		"timeout is negative", "max tokens is negative", "retry: "} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	t.Setenv("T_OPEN_KEY", "")
	if _, _, err := Open(Setup{Name: "p", Model: "m", DefaultBaseURL: "https://x", APIKeyEnv: "T_OPEN_KEY"}); err == nil ||
		err.Error() != "p: the variable T_OPEN_KEY, named to hold the API key, is unset or empty" {
		t.Errorf("unset key: err = %v", err)
	}
	t.Setenv("T_OPEN_KEY", "sk-1")
	b, key, err := Open(Setup{Name: "p", Model: "m", DefaultBaseURL: "https://x", APIKeyEnv: "T_OPEN_KEY"})
	if err != nil || key != "sk-1" || b.Endpoint.String() != `p model "m" at https://x` || b.Retry != shell.DefaultModelRetry {
		t.Errorf("Open = %+v, %q, %v", b, key, err)
	}
}

// Base.Complete retries a transient failure and explains a permanent one
// with the endpoint and the key's variable.
func TestBaseComplete(t *testing.T) {
	statuses := []int{503, 200, 401}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := statuses[0]
		statuses = statuses[1:]
		w.WriteHeader(s)
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	t.Setenv("T_BASE_KEY", "sk-1")
	b, _, err := Open(Setup{Name: "p", Model: "m", BaseURL: srv.URL, APIKeyEnv: "T_BASE_KEY",
		Retry: shell.RetryPolicy{Backoff: time.Millisecond, Jitter: -1}})
	if err != nil {
		t.Fatal(err)
	}
	attempt := func(ctx context.Context) (core.ModelReply, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, nil)
		resp, err := b.HTTP.Do(req)
		if err != nil {
			return core.ModelReply{}, err
		}
		resp.Body.Close()
		return core.ModelReply{Text: "ok"}, nil
	}
	var retries int
	reply, err := b.Complete(context.Background(), func(shell.ModelRetry) { retries++ }, attempt)
	if err != nil || reply.Text != "ok" || retries != 1 {
		t.Errorf("Complete = %+v, %v after %d retries", reply, err, retries)
	}
	_, err = b.Complete(context.Background(), nil, attempt)
	want := `p model "m" at ` + srv.URL + ": the endpoint refused the API key (401); check the variable T_BASE_KEY"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, shell.ErrModelPermanent) {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestCheckObject(t *testing.T) {
	for body, want := range map[string]string{
		`{"type":"message","content":[]}`: "",
		`{"type":"message","content":{}}`: "the reply is not a message with content",
		`{"type":"error","content":[]}`:   "the reply is not a message with content",
		`{"type":5,"content":[]}`:         "the reply is not a message with content",
		`<html>bad gateway</html>`:        "the reply is not a message (invalid character",
	} {
		err := CheckObject([]byte(body), "message", "type", "message", "content")
		if (want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
}
