package httpcall

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

// TestRender: Render keeps the request an attempt hands Do, sends nothing,
// and redacts the key wherever it is, a credential header that holds no
// key whole, and the URL's password; an attempt that fails before Do
// returns its error; a Base opened RenderOnly reads no key and does not
// complete.
func TestRender(t *testing.T) {
	t.Setenv("T_RENDER_KEY", "sk-render-1234")
	b, _, err := Open(Setup{Name: "p", Model: "m", DefaultBaseURL: "https://x", APIKeyEnv: "T_RENDER_KEY"})
	if err != nil {
		t.Fatal(err)
	}
	send := func(ctx context.Context) (core.ModelReply, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", "https://user:pw@api.example/v1/x?k=sk-render-1234", strings.NewReader(`{"a":1}`))
		req.Header.Set("Authorization", "Bearer sk-render-1234")
		req.Header.Set("Proxy-Authorization", "Basic dXNlcjpwdw==")
		req.Header.Add("X-Other", "one")
		req.Header.Add("X-Other", "two")
		_, err := b.HTTP.Do(req)
		return core.ModelReply{}, err
	}
	out, err := b.Render(send)
	if err != nil {
		t.Fatal(err)
	}
	if out.Provider != "p" || out.Method != "POST" || out.URL != "https://user:xxxxx@api.example/v1/x?k=[redacted:T_RENDER_KEY]" || string(out.Body) != `{"a":1}` ||
		out.Headers["Authorization"] != "Bearer [redacted:T_RENDER_KEY]" || out.Headers["Proxy-Authorization"] != "[redacted]" || out.Headers["X-Other"] != "one, two" {
		t.Errorf("rendered %+v", out)
	}
	refused := errors.New("cannot build the request")
	if _, err := b.Render(func(context.Context) (core.ModelReply, error) { return core.ModelReply{}, refused }); !errors.Is(err, refused) {
		t.Errorf("an attempt that fails before Do: %v", err)
	}

	t.Setenv("T_RENDER_KEY", "")
	r, key, err := Open(Setup{Name: "p", Model: "m", DefaultBaseURL: "https://x", APIKeyEnv: "T_RENDER_KEY", RenderOnly: true})
	if err != nil || key != "[redacted:T_RENDER_KEY]" {
		t.Fatalf("Open RenderOnly: %q, %v", key, err)
	}
	if _, err := r.Complete(context.Background(), nil, send); err == nil || !strings.Contains(err.Error(), "render requests only") {
		t.Errorf("Complete of a render-only Base: %v", err)
	}
}
