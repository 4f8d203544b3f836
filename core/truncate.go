package core

import (
	"fmt"
	"unicode/utf8"
)

// truncate cuts s to at most max bytes on a UTF-8 boundary and says how much
// was cut, so the model knows the output is partial.
func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	// The marker is measured with the widest number it can hold.
	marker := fmt.Sprintf("\n[truncated: showing %d of %d bytes]", len(s), len(s))
	keep := max - len(marker)
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf("\n[truncated: showing %d of %d bytes]", keep, len(s))
}
