package server

import (
	_ "embed"
	"net/http"
)

// openAPIDoc describes the API (OpenAPI 3.1); TestOpenAPIMatchesRoutes
// keeps it true to apiRoutes.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDoc)
}
