package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stepwise-agent/stepwise/store"
)

// TestOpenMustExistAndMissingDirectory: a read-only open of a missing file
// creates nothing and is ErrNotFound, as is a missing directory; a
// directory is not a database.
func TestOpenMustExistAndMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "absent.db")
	if _, err := Open(path, &Options{MustExist: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("MustExist on a missing file: %v", err)
	}
	if _, err := filepath.Glob(path + "*"); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(path + "*"); len(m) != 0 {
		t.Fatalf("a read-only open created %v", m)
	}
	if _, err := Open(filepath.Join(dir, "no", "such", "dir.db"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing directory: %v", err)
	}
	if _, err := Open(dir, nil); err == nil {
		t.Fatal("a directory opened as a database")
	}
}
