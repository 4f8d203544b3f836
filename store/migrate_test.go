package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrationsNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, schema version %d", len(ms), SchemaVersion())
	}
}

func TestMigrateFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	for i := 0; i < 2; i++ { // the second open finds nothing to do
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n, max int
		if err := s.r.QueryRow(`SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != SchemaVersion() || max != SchemaVersion() {
			t.Fatalf("open %d: %d migrations recorded, max %d; want %d", i, n, max, SchemaVersion())
		}
		var mode string
		s.r.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		var fk int
		s.w.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
		if mode != "wal" || fk != 0 { // declared, kept by construction (TestForeignKeysHold)
			t.Fatalf("journal mode %s, foreign keys %d", mode, fk)
		}
		s.Close()
	}
}

func TestMigrateNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`INSERT INTO schema_migrations (version, name, applied_ns) VALUES (?, 'future.sql', 0)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path, nil)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open a newer database: %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "x.db"), &Options{Sync: "OFF"}); err == nil {
		t.Error("sync OFF accepted")
	}
	if _, err := Open(":memory:", nil); err == nil {
		t.Error(":memory: accepted")
	}
	s, err := Open(filepath.Join(dir, "odd ?#% name.db"), &Options{Sync: SyncFull})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sync int
	s.w.QueryRow(`PRAGMA synchronous`).Scan(&sync)
	if sync != 2 {
		t.Fatalf("synchronous = %d, want 2 (FULL)", sync)
	}
	if filepath.Base(s.Path()) != "odd ?#% name.db" {
		t.Fatalf("path %s", s.Path())
	}
}
