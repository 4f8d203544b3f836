package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stepwise-agent/stepwise/shell"
	"github.com/stepwise-agent/stepwise/store"
)

func init() {
	ex := &command{name: "export", args: "RUN_ID [-o FILE | --tree DIR]", summary: "write a run as one portable file",
		help: `Writes the run (agent, steps, results, states) as one portable JSON file, to stdout or -o FILE.
With --tree DIR, writes the run and every child run of its sub-agent calls (and theirs), each
to DIR/RUN_ID.json, and prints the files written; stepwise import DIR/*.json loads the tree.`}
	ex.run = func(e *env, args []string) int {
		fs := e.flags(ex)
		db := e.dbFlag(fs)
		outFile := fs.String("o", "", "write to this file instead of stdout")
		tree := fs.String("tree", "", "write the run and its sub-agents' child runs, each to DIR/RUN_ID.json")
		pos, code := e.parse(ex, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.readSession(ex.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		if *tree != "" {
			if *outFile != "" {
				fmt.Fprintf(e.stderr, "stepwise export: give -o FILE or --tree DIR, not both\n")
				return exitUsage
			}
			return e.exportTree(ctx, st, pos[0], *tree)
		}
		var buf bytes.Buffer
		if err := st.Export(ctx, pos[0], &buf); err != nil {
			return e.storeErr(ex.name, err)
		}
		if *outFile == "" {
			_, _ = e.stdout.Write(buf.Bytes())
			return 0
		}
		if err := os.WriteFile(*outFile, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(e.stderr, "stepwise export: %v\n", err)
			return exitInternal
		}
		return 0
	}
	register(ex)

	im := &command{name: "import", args: "FILE...", summary: "load runs written by export",
		help: "Loads runs written by `stepwise export` (checking every record of each), and prints their ids,\none a line. A tree written by export --tree loads with stepwise import DIR/*.json."}
	im.run = func(e *env, args []string) int {
		fs := e.flags(im)
		db := e.dbFlag(fs)
		pos, code := e.parse(im, fs, args, 1, 1<<20)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.session(im.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		for _, file := range pos {
			data, err := e.readInput(file)
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise import: %v\n", err)
				return exitUsage
			}
			id, err := st.Import(ctx, bytes.NewReader(data))
			if err != nil {
				fmt.Fprintf(e.stderr, "stepwise import: %s: %v\n", file, err)
				return exitUsage
			}
			fmt.Fprintln(e.stdout, id)
		}
		return 0
	}
	register(im)
}

// exportTree writes runID and every child run of its sub-agent calls, and
// theirs, each to dir/ID.json (export --tree).
func (e *env) exportTree(ctx context.Context, st store.Store, runID, dir string) int {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(e.stderr, "stepwise export: %v\n", err)
		return exitInternal
	}
	queue := []string{runID}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		var buf bytes.Buffer
		if err := st.Export(ctx, id, &buf); err != nil {
			return e.storeErr("export", err)
		}
		path := filepath.Join(dir, id+".json")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(e.stderr, "stepwise export: %v\n", err)
			return exitInternal
		}
		fmt.Fprintln(e.stdout, path)
		children, err := shell.Children(ctx, st, id)
		if err != nil {
			return e.storeErr("export", err)
		}
		for _, c := range children {
			queue = append(queue, c.Info.ID)
		}
	}
	return 0
}
