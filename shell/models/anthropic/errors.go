package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// explain turns what Call returned into the error Complete returns:
// ctx.Err() when ctx ended, a permanent error that says what to check, a
// *shell.TransientError when the retries ran out.
func (p *Provider) explain(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var se *httpcall.StatusError
	if errors.As(err, &se) {
		said := ""
		if se.Message != "" {
			said = fmt.Sprintf(" (the server said: %s)", se.Message)
		}
		switch se.Status {
		case http.StatusUnauthorized, http.StatusForbidden:
			if p.o.APIKeyEnv == "" {
				return httpcall.Permanentf("%s: the endpoint refused the request (%d) and no API key was sent; name the variable that holds the key (api_key_env)%s", p, se.Status, said)
			}
			return httpcall.Permanentf("%s: the endpoint refused the API key (%d); check the variable %s%s", p, se.Status, p.o.APIKeyEnv, said)
		case http.StatusNotFound:
			return httpcall.Permanentf("%s: model or endpoint not found (404)%s", p, said)
		}
		return httpcall.Permanentf("%s: the endpoint rejected the request (%s)", p, httpcall.StatusText(se.Status, se.Message))
	}
	var ge *httpcall.GaveUpError
	if errors.As(err, &ge) {
		return ge.Transient(p.String())
	}
	if errors.Is(err, shell.ErrModelPermanent) {
		return httpcall.Permanentf("%s: %v", p, err)
	}
	return fmt.Errorf("%s: %w", p, err)
}
