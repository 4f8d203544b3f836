package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAgentFileChangesAreSeen: an agent file is read once while it stays
// the same file, and read again after any change: an edit, an edit of the
// same size that keeps its modification time, the file moved to another
// directory (its relative paths then mean other files), a symlink that
// leads outside the directory instead (refused).
func TestAgentFileChangesAreSeen(t *testing.T) {
	dir := t.TempDir()
	agentFile := func(path, prompt string) {
		t.Helper()
		text := "name = \"a\"\nsystem_prompt = \"" + prompt + "\"\n[models.primary]\nprovider = \"script\"\nscript = \"s.jsonl\"\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(t, dir, "s.jsonl", `{"text": "hi"}`+"\n")
	file := filepath.Join(dir, "a.toml")
	agentFile(file, "one")
	a, err := newAgents(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	prompt := func(what string) string {
		t.Helper()
		ag, spec, err := a.byName("a")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if spec.Path == "" || ag == nil {
			t.Fatalf("%s: no agent", what)
		}
		return ag.Config.SystemPrompt
	}
	if got := prompt("first"); got != "one" {
		t.Fatalf("first load: %q", got)
	}
	first, _, _ := a.byName("a")
	if again, _, _ := a.byName("a"); again != first {
		t.Fatal("an unchanged file built a new agent")
	}

	agentFile(file, "two")
	if got := prompt("edited"); got != "two" {
		t.Fatalf("after an edit: %q", got)
	}

	// The same size, the modification time put back: the change time moved.
	fi, _ := os.Stat(file)
	agentFile(file, "six")
	if err := os.Chtimes(file, time.Time{}, fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := prompt("edited in place"); got != "six" {
		t.Fatalf("after a same-size edit with the old modification time: %q", got)
	}

	// Moved into a subdirectory, reached through a symlink inside the
	// directory: the spec's path is the new one.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, sub, "s.jsonl", `{"text": "from sub"}`+"\n")
	if err := os.Rename(file, filepath.Join(sub, "a.toml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sub, "a.toml"), file); err != nil {
		t.Fatal(err)
	}
	if _, spec, err := a.byName("a"); err != nil || filepath.Dir(spec.Path) != sub {
		t.Fatalf("after the move: %v, path %v", err, spec)
	}

	// Now a symlink to a file outside the directory: refused, though a
	// file by that name loaded before.
	outside := t.TempDir()
	agentFile(filepath.Join(outside, "a.toml"), "evil")
	os.Remove(file)
	if err := os.Symlink(filepath.Join(outside, "a.toml"), file); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.byName("a"); err == nil {
		t.Fatal("a symlink out of the directory was followed")
	}
}
