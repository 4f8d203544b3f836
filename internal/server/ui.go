package server

import (
	"embed"
	"mime"
	"net/http"
	"path"
	"regexp"
)

// The inspector: a page and its assets, embedded; plain HTML, CSS and
// JavaScript, no build step.
//
//go:embed ui
var uiFiles embed.FS

// assetName is what an asset's name may look like: no path, no dots but
// the extension's.
var assetName = regexp.MustCompile(`^[a-z0-9-]+\.(js|css|svg)$`)

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b)
}

func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	if !assetName.MatchString(name) {
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "no asset %q", name))
		return
	}
	b, err := uiFiles.ReadFile("ui/" + name)
	if err != nil {
		writeError(w, errorf(http.StatusNotFound, codeNotFound, "no asset %q", name))
		return
	}
	w.Header().Set("Content-Type", mime.TypeByExtension(path.Ext(name)))
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
