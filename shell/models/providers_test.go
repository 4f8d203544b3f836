package models_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stepwise-agent/stepwise/shell/models"
)

// Every provider in the table is whole (a name, a telemetry name, a
// builder; an HTTP one a default base URL and a required model), named
// once, and described in this package's doc.
func TestProvidersAreWholeAndDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range models.Providers() {
		if e.Name == "" || e.GenAIName == "" || e.New == nil {
			t.Errorf("%q: an entry needs Name, GenAIName and New", e.Name)
		}
		if seen[e.Name] {
			t.Errorf("%q is in the table twice", e.Name)
		}
		seen[e.Name] = true
		if e.HTTP && (e.DefaultBaseURL == "" || len(e.Required) == 0 || e.Required[0] != "model") {
			t.Errorf("%q: an HTTP provider has a default base URL and requires model", e.Name)
		}
		if !strings.Contains(string(doc), `//   - "`+e.Name+`"`) {
			t.Errorf("%q is not described in shell/models/doc.go", e.Name)
		}
	}
	if got := strings.Join(models.Providers().Names(), ", "); got != "openai, openai-responses, anthropic, script" {
		t.Errorf("Names() = %s", got)
	}
}
