package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capture is an io.Writer that keeps the first max bytes written and counts
// the rest, so a chatty process never blocks and never grows memory.
// It also keeps the last tailMax bytes, for error messages.
type capture struct {
	max   int
	buf   []byte
	total int64
	last  []byte // the last tailMax bytes written
}

// tailMax is how many of the last bytes written a capture keeps.
const tailMax = 2 << 10

func (c *capture) Write(p []byte) (int, error) {
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	c.total += int64(len(p))
	if len(p) >= tailMax {
		c.last = append(c.last[:0], p[len(p)-tailMax:]...)
	} else {
		if over := len(c.last) + len(p) - tailMax; over > 0 {
			c.last = append(c.last[:0], c.last[over:]...)
		}
		c.last = append(c.last, p...)
	}
	return len(p), nil
}

// tailText returns the last bytes written (at most tailMax) as text, led
// by "..." when earlier bytes were left out.
func (c *capture) tailText() string {
	b := c.last
	lead := ""
	if c.total > int64(len(b)) {
		lead = "..."
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return lead + strings.ToValidUTF8(string(b), "\uFFFD")
}

// cut is how many bytes were written but not kept.
func (c *capture) cut() int64 { return c.total - int64(len(c.buf)) }

// text returns the kept bytes as text (see toText), followed by a note
// saying how much was cut, if anything was.
func (c *capture) text() string {
	s := toText(c.buf, c.cut() > 0)
	if n := c.cut(); n > 0 {
		s += cutNote(n, c.max)
	}
	return s
}

// cutNote tells the model that n bytes were left out under a limit.
func cutNote(n int64, limit int) string {
	return fmt.Sprintf("\n[... %d more bytes cut: the limit is %d bytes]", n, limit)
}

// toText makes b valid UTF-8: when b was cut (truncated), a rune split by
// the cut is dropped; other invalid bytes become U+FFFD.
func toText(b []byte, truncated bool) string {
	if truncated {
		b = trimPartialRune(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// tail returns at most the last n bytes of s as valid UTF-8, marked with a
// leading "..." when something was left out.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "..." + s
}
