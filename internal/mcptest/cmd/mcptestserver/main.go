// Command mcptestserver serves the mcptest tools over stdio (newline-delimited
// JSON-RPC on stdin and stdout). Its crash tool exits the process with status 3.
//
// With -start-once PATH it starts only if PATH does not exist, and creates
// it: every later start fails (exit 1, a message on stderr), as a server
// whose backing service went away does. Other arguments are ignored (tests
// pass a marker to find the process by).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/internal/mcptest"
)

func main() {
	once := flag.String("start-once", "", "start only if this file does not exist, and create it")
	flag.Parse()
	if *once != "" {
		f, err := os.OpenFile(*once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, fs.ErrExist) {
			fmt.Fprintln(os.Stderr, "mcptestserver: already started once; refusing to start again")
			os.Exit(1)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcptestserver:", err)
			os.Exit(1)
		}
		f.Close()
	}
	s := mcptest.NewServer(&mcptest.Options{Crash: func() { os.Exit(3) }})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
		os.Exit(1)
	}
}
