package openai

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/stepwise-agent/stepwise/shell/models/internal/httpcall"
)

// versionSegment matches an API version in a URL path segment: v1, v1beta.
var versionSegment = regexp.MustCompile(`^v\d+([a-z]+\d*)?$`)

// versionHint suggests /v1 for a 404 from a base URL with no version in
// its path (http://localhost:11434 for Ollama's http://localhost:11434/v1).
func versionHint(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || isAzure(baseURL) {
		return ""
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if versionSegment.MatchString(seg) {
			return ""
		}
	}
	return fmt.Sprintf("; OpenAI-compatible servers usually serve under /v1: try base_url = %q", strings.TrimRight(baseURL, "/")+"/v1")
}

func permanentf(format string, args ...any) error { return httpcall.Permanentf(format, args...) }
