package shell

import "strings"

// StreamRedactor redacts text that arrives in pieces (a reply as it
// streams, a process's output as it is written): a secret split across
// two pieces is still caught, because the end of the text that could be
// the start of a secret is held back until the next piece shows what it
// is, or until Flush. Everything else passes through at once. Not safe
// for concurrent use.
type StreamRedactor struct {
	x    Redactor
	held string
}

// Stream returns a StreamRedactor that redacts what x redacts.
func (x Redactor) Stream() *StreamRedactor { return &StreamRedactor{x: x} }

// Write takes the next piece and returns the redacted text that can be
// let out now (possibly "").
func (s *StreamRedactor) Write(piece string) string {
	if s.x.r == nil {
		return piece
	}
	text := s.x.String(s.held + piece)
	keep := s.x.secretPrefix(text)
	s.held = text[len(text)-keep:]
	return text[:len(text)-keep]
}

// Flush returns what is held back, redacted, and forgets it.
func (s *StreamRedactor) Flush() string {
	out := s.x.String(s.held)
	s.held = ""
	return out
}

// Reset forgets what is held back, unsent.
func (s *StreamRedactor) Reset() { s.held = "" }

// secretPrefix is the length of the longest end of text that is the start
// of a secret, but not a whole one (whole ones are already replaced).
func (x Redactor) secretPrefix(text string) int {
	longest := 0
	for _, v := range x.values {
		for n := min(len(v)-1, len(text)); n > longest; n-- {
			if strings.HasSuffix(text, v[:n]) {
				longest = n
				break
			}
		}
	}
	return longest
}
