package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An agent file over MaxFileBytes is refused by Load from its size and by
// Parse from its length (the library path), as ErrInvalid and
// ErrTooLarge; one at the limit is read.
func TestAgentFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	f, err := os.Create(big)
	if err == nil {
		err = f.Truncate(50 << 20)
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = Load(big)
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "this one is 52428800 bytes") {
		t.Fatalf("Load: %v", err)
	}
	_, err = Parse(make([]byte, MaxFileBytes+1), "inline", dir)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "inline: an agent file may hold at most 1048576 bytes") {
		t.Fatalf("Parse: %v", err)
	}
	// At the limit: read whole (the padding is a TOML comment).
	head := "name = \"edge\"\n[models.primary]\nprovider = \"openai\"\nmodel = \"m\"\n#"
	edge := filepath.Join(dir, "edge.toml")
	if err := os.WriteFile(edge, []byte(head+strings.Repeat("x", MaxFileBytes-len(head))), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(edge); err != nil || len(s.Text) != MaxFileBytes {
		t.Fatalf("an agent file of exactly %d bytes: %v", MaxFileBytes, err)
	}
	// A file that is not regular (a FIFO's size says nothing) is cut off
	// past the limit as it is read.
	if data, err := ReadFile("/dev/zero"); !errors.Is(err, ErrTooLarge) || data != nil || !strings.Contains(err.Error(), "this one is more than that") {
		t.Fatalf("/dev/zero: %v", err)
	}
}
