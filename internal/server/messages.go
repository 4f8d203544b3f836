package server

import (
	"net/http"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// A run is a conversation (docs/adr/0032-conversations.md): POST
// /v1/runs/{id}/messages sends the user's next message, GET lists the
// conversation so far in the OpenAI chat format.

// messageRequest is POST /v1/runs/{id}/messages.
type messageRequest struct {
	Content string `json:"content"`
}

// postMessage stores the message in the run's inbox (durable and numbered
// before the answer: racing posts each land, in the order the store
// numbered them) and leaves the run for a worker: a completed run begins
// its next turn with it, a run at work takes it as its agent's
// [conversation] on_message says. 202 with the run; refused, nothing
// stored: an empty message (400), one over the agent's limit (413), a run
// that failed or was cancelled (409 ended), an unknown run (404).
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req messageRequest
	if err := decode(r, &req, false); err != nil {
		writeError(w, err)
		return
	}
	ag, err := s.agentFor(r.Context(), id, "")
	if err != nil {
		writeError(w, err)
		return
	}
	if _, err := s.runner.Pool().Message(r.Context(), ag, id, req.Content); err != nil {
		writeError(w, err)
		return
	}
	s.dispatch(id)
	s.hub.notify(id)
	s.respondRun(w, r, id, http.StatusAccepted, 0)
}

// apiMessage is one message of a run's conversation in the OpenAI chat
// format, with its index in the conversation (from 0).
type apiMessage struct {
	Index int `json:"index"`
	shell.ChatMessage
}

// messageList is a page of GET /v1/runs/{id}/messages.
type messageList struct {
	Messages []apiMessage `json:"messages"`
	// NextFrom is the from of the next page; none on the last.
	NextFrom int `json:"next_from,omitempty"`
}

// getMessages lists the run's conversation as its last state holds it,
// from=N (the index of the first message, 0 by default) and limit=N,
// paged as GET /steps is. Messages still waiting for the run to take them
// (in its inbox, or queued until its next model call) are not in it yet.
func (s *Server) getMessages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from, limit, err := pageOf(r.URL.Query(), "a message index")
	if err != nil {
		writeError(w, err)
		return
	}
	ri, err := s.cfg.Store.Run(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	st, _, err := s.runner.Pool().Latest(r.Context(), id, ri.LastSeq)
	if err != nil {
		writeError(w, err)
		return
	}
	out := messageList{Messages: []apiMessage{}}
	msgs := st.Messages
	if from >= len(msgs) {
		writeJSON(w, http.StatusOK, out)
		return
	}
	end := min(len(msgs), from+limit)
	for i, m := range shell.ChatMessages(msgs[from:end]) {
		// A compaction's summary is a view of messages the log still
		// holds, not one of the conversation's (nor of the OpenAI format
		// a run starts from): it is left out, its index skipped.
		if m.Role != core.RoleSummary {
			out.Messages = append(out.Messages, apiMessage{Index: from + i, ChatMessage: m})
		}
	}
	if end < len(msgs) {
		out.NextFrom = end
	}
	writeJSON(w, http.StatusOK, out)
}
