package schema

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestRead(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	ms, err := Read(fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A")}, "m")
	if err != nil || len(ms) != 2 || ms[0] != (Migration{1, "0001_a.sql", "A"}) || ms[1] != (Migration{2, "0002_b.sql", "B"}) {
		t.Fatalf("Read = %+v, %v", ms, err)
	}
	if v := Version(fstest.MapFS{"m/0001_a.sql": file("A"), "m/0002_b.sql": file("B")}, "m"); v != 2 {
		t.Errorf("Version = %d", v)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"a gap":       {"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")},
		"no number":   {"m/a.sql": file("A")},
		"not from 1":  {"m/0002_b.sql": file("B")},
		"two of them": {"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")},
	} {
		if _, err := Read(fsys, "m"); err == nil || !strings.Contains(err.Error(), "migration ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if v := Version(fstest.MapFS{}, "m"); v != 0 {
		t.Errorf("Version of nothing = %d", v)
	}
}
