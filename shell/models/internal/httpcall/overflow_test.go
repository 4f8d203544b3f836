package httpcall

import "testing"

// The refusals that mean "too long for the context window", as providers
// word them, and ones that do not.
func TestOverflowed(t *testing.T) {
	for _, c := range []struct {
		se   StatusError
		want bool
	}{
		{StatusError{Status: 400, Type: "context_length_exceeded", Message: "This model's maximum context length is 128000 tokens."}, true},
		{StatusError{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 215000 tokens > 200000 maximum"}, true},
		{StatusError{Status: 400, Message: "the request exceeds the available context size, try increasing it"}, true},
		{StatusError{Status: 413, Message: "Request too large"}, true},
		{StatusError{Status: 400, Type: "invalid_request_error", Message: "Invalid value for 'temperature'"}, false},
		{StatusError{Status: 429, Message: "too many tokens per minute"}, false},
		{StatusError{Status: 500, Type: "context_length_exceeded"}, false},
	} {
		if got := Overflowed(&c.se); got != c.want {
			t.Errorf("%+v: %v, want %v", c.se, got, c.want)
		}
	}
}
