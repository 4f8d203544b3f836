// Package schema reads a store's embedded migrations: files named
// NNNN_what.sql, numbered 1, 2, 3... with no gap.
package schema

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one embedded schema change; Version is the file's number.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Read lists the migrations in dir of fsys in order. Their numbers must
// run 1, 2, 3... with no gap.
func Read(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with its number", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want number %d", m.Name, i+1)
		}
	}
	return out, nil
}

// Version is the schema version the migrations in dir of fsys write: the
// number of the last one (0 when they cannot be read).
func Version(fsys fs.FS, dir string) int {
	ms, err := Read(fsys, dir)
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
