package anthropic

import (
	"context"

	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// explain turns what Call returned into the error Complete returns (see
// httpcall.Explain).
func (p *Provider) explain(ctx context.Context, err error) error {
	return httpcall.Explain(ctx, err, httpcall.Provider{Who: p, KeyEnv: p.o.APIKeyEnv, KeyHint: " (api_key_env)"})
}
