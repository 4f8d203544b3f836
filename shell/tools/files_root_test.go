package tools

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// The file tools hold their root open between calls, yet every call sees
// the directory that is at the root's path now: a root replaced by another
// directory, moved away or removed, as when each call opened it.
func TestFilesRootFollowsItsPath(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	mkRoot := func(content string) {
		t.Helper()
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkRoot("first")
	files := Files(FilesOptions{Root: root})
	read, write, list := files[0], files[1], files[2]
	wantOutput(t, run(t, read, fileArgs("path", "f.txt")), "first")

	// Replaced: the old directory moved aside, a new one in its place.
	if err := os.Rename(root, filepath.Join(parent, "old")); err != nil {
		t.Fatal(err)
	}
	mkRoot("second")
	if res := run(t, read, fileArgs("path", "f.txt")); res.Output != "second" {
		t.Fatalf("read after the root was replaced: %q %q, want the new root's file", res.Output, res.Error)
	}
	wantOutput(t, run(t, write, fileArgs("path", "g.txt", "content", "new")), "g.txt")
	if _, err := os.Stat(filepath.Join(root, "g.txt")); err != nil {
		t.Fatalf("write_file wrote elsewhere than the current root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(parent, "old", "g.txt")); err == nil {
		t.Fatal("write_file wrote into the root's old directory")
	}
	wantOutput(t, run(t, list, fileArgs("path", ".")), "f.txt", "g.txt")

	// Moved away, nothing in its place: unusable, not the old directory.
	if err := os.Rename(root, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	for i, tool := range files {
		wantError(t, run(t, tool, []string{fileArgs("path", "f.txt"), fileArgs("path", "f.txt", "content", "x"), fileArgs("path", ".")}[i]),
			"the root directory is unusable")
	}
	// A symlink to the directory held: the same directory, read again.
	if err := os.Symlink(filepath.Join(parent, "moved"), root); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, run(t, read, fileArgs("path", "f.txt")), "second")
	// Removed.
	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	wantError(t, run(t, read, fileArgs("path", "f.txt")), "the root directory is unusable")
	// A file in its place.
	if err := os.WriteFile(root, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, run(t, read, fileArgs("path", "f.txt")), "the root directory is unusable")
}

// A FIFO in the root is refused at once: opening one to read waits for a
// writer, which would hold the call until its timeout.
func TestReadFileFIFO(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fifo := filepath.Join(root, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	read := Files(FilesOptions{Root: root})[0]
	done := make(chan core.ToolResult, 1)
	go func() { done <- runRaw(read, fileArgs("path", "pipe")) }()
	select {
	case res := <-done:
		wantError(t, res, "pipe is not a regular file")
	case <-time.After(10 * time.Second):
		// Release the blocked open before failing.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("read_file on a FIFO still waits after 10 s")
	}
}

// Calls at once share the root held open.
func TestFilesRootConcurrent(t *testing.T) {
	t.Parallel()
	root, _ := fileTree(t)
	read := Files(FilesOptions{Root: root})[0]
	errs := make(chan string, 16*20)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if res := runRaw(read, fileArgs("path", "sub/a.txt")); res.Output != "alpha" {
					errs <- res.Output + res.Error
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a concurrent read got %q", e)
	}
}

// BenchmarkReadFile: one read_file call of a short file, the root held
// open between calls (docs/performance.md).
func BenchmarkReadFile(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "note.txt"), []byte("a note of a few words\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	read := Files(FilesOptions{Root: root})[0]
	call := core.ToolCall{ID: "c1", Name: "read_file", Args: []byte(fileArgs("path", "note.txt"))}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := read.Run(ctx, call, shell.RunContext{}); res.Error != "" {
			b.Fatal(res.Error)
		}
	}
}
