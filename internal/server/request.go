package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/shell/agent"
)

// getStepRequest answers GET /v1/runs/{id}/steps/{seq}/request: the
// request the model received at step seq (agent.RenderStep), the object
// stepwise show --step N --request --json prints. Nothing is sent to the
// model, and no MCP server is started. A step that made no model call is
// a 400 bad_request saying what the step did.
func (s *Server) getStepRequest(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.Atoi(r.PathValue("seq"))
	if err != nil || seq < 0 {
		writeError(w, errorf(http.StatusBadRequest, codeBadRequest, "step %q: want a step number", r.PathValue("seq")))
		return
	}
	out, err := agent.RenderStep(r.Context(), s.cfg.Store, r.PathValue("id"), seq)
	if errors.Is(err, shell.ErrNoModelCall) {
		err = errorf(http.StatusBadRequest, codeBadRequest, "%v", err)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
