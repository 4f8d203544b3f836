package main

import (
	"bytes"
	"fmt"
	"os"
)

func init() {
	ex := &command{name: "export", args: "RUN_ID [-o FILE]", summary: "write a run as one portable file",
		help: "Writes the run (agent, steps, results, states) as one portable JSON file, to stdout or -o FILE."}
	ex.run = func(e *env, args []string) int {
		fs := e.flags(ex)
		db := e.dbFlag(fs)
		outFile := fs.String("o", "", "write to this file instead of stdout")
		pos, code := e.parse(ex, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		ctx, st, done, code := e.readSession(ex.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
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

	im := &command{name: "import", args: "FILE", summary: "load a run written by export",
		help: "Loads a run written by `stepwise export` (checking every record), and prints its id."}
	im.run = func(e *env, args []string) int {
		fs := e.flags(im)
		db := e.dbFlag(fs)
		pos, code := e.parse(im, fs, args, 1, 1)
		if code >= 0 {
			return code
		}
		data, err := e.readInput(pos[0])
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise import: %v\n", err)
			return exitUsage
		}
		ctx, st, done, code := e.session(im.name, *db)
		if code >= 0 {
			return code
		}
		defer done()
		id, err := st.Import(ctx, bytes.NewReader(data))
		if err != nil {
			fmt.Fprintf(e.stderr, "stepwise import: %v\n", err)
			return exitUsage
		}
		fmt.Fprintln(e.stdout, id)
		return 0
	}
	register(im)
}
