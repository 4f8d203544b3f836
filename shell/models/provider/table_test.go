package provider_test

import (
	"reflect"
	"testing"

	"github.com/stepwise-agent/stepwise/shell/models/provider"
)

func TestGivenListsSetKeysInFieldOrder(t *testing.T) {
	no := false
	s := provider.Settings{Provider: "p", ThinkingBudget: 2048, Stream: &no, Accepts: []string{"image"}}
	want := []string{"provider", "stream", "accepts", "thinking_budget"}
	if got := s.Given(); !reflect.DeepEqual(got, want) {
		t.Errorf("Given() = %v, want %v", got, want)
	}
	if got := (provider.Settings{}).Given(); got != nil {
		t.Errorf("zero Settings: Given() = %v, want none", got)
	}
}

func TestRefusalNamesTheProvidersThatTakeTheKey(t *testing.T) {
	a := provider.Entry{Name: "a", HTTP: true, Supports: provider.Supports{Streaming: true, Attachments: []string{"image"}}}
	b := provider.Entry{Name: "b", HTTP: true, Supports: provider.Supports{Streaming: true}, Keys: []string{"own", "shared"}}
	c := provider.Entry{Name: "c", Keys: []string{"script", "shared"}}
	table := provider.Table{a, b, c}
	for _, tc := range []struct {
		e         provider.Entry
		key, want string
	}{
		{c, "retry", "applies to the HTTP providers (a, b), not c"},
		{c, "stream", "applies to the HTTP providers (a, b), not c"},
		{b, "accepts", "applies to provider a only"},
		{a, "own", "applies to provider b only"},
		{a, "shared", "applies to providers b, c only"},
		{a, "script", "applies to provider c only"},
		{a, "accepts", ""},
		{b, "shared", ""},
		{a, "model", ""}, // a key every provider takes
	} {
		if got := table.Refusal(tc.e, tc.key); got != tc.want {
			t.Errorf("Refusal(%s, %s) = %q, want %q", tc.e.Name, tc.key, got, tc.want)
		}
	}
	if e, ok := table.Lookup("b"); !ok || e.Name != "b" {
		t.Errorf("Lookup(b) = %v, %v", e.Name, ok)
	}
	if _, ok := table.Lookup("d"); ok {
		t.Error("Lookup(d) found an entry")
	}
}
