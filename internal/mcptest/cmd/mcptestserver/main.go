// Command mcptestserver serves the mcptest tools over stdio (newline-delimited
// JSON-RPC on stdin and stdout). Its crash tool exits the process with status 3.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stepwise-agent/stepwise/internal/mcptest"
)

func main() {
	s := mcptest.NewServer(&mcptest.Options{Crash: func() { os.Exit(3) }})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
		os.Exit(1)
	}
}
