package tools

import (
	"fmt"
	"sync"
)

// hiding is whether this process hides its environment from the processes
// its tools start: a property of the whole process (its dumpable flag),
// so it is kept once per process.
var hiding struct {
	mu sync.Mutex
	// hidden: the environment is hidden now.
	hidden bool
	// exposed: ExposeEnvironment turned the default off.
	exposed bool
}

// HideEnvironment makes this process non-dumpable, so that the processes
// its tools start can read neither its environment, which holds the
// secrets it reads by name (API keys, header tokens), nor its memory:
// /proc/<pid>/environ, /proc/<pid>/mem and ptrace are then closed to
// every process without CAP_SYS_PTRACE, even one of the same user, and
// supervised tools never have that capability (see Supervisor).
//
// It is the default: the first tool process started through this package
// (a command or run_code tool, a stdio MCP server; see Supervise) calls
// it, unless ExposeEnvironment was called. Calling it at start, before
// any tool runs, as the stepwise CLI does, changes nothing but the
// moment.
//
// It also stops core dumps of this process, and makes its /proc/<pid>
// files owned by root, so a process not run as root can no longer read
// its own /proc/self/io, for one. Elsewhere than on Linux it does nothing.
func HideEnvironment() error {
	hiding.mu.Lock()
	defer hiding.mu.Unlock()
	if err := setDumpable(false); err != nil {
		return fmt.Errorf("hide the environment: %w", err)
	}
	hiding.hidden, hiding.exposed = true, false
	return nil
}

// ExposeEnvironment opts this process out of hiding its environment from
// the processes its tools start (see HideEnvironment), and undoes the
// hiding if it was done: those processes can then read this process's
// environment and memory through /proc, as any process of the same user
// can. Call it only in a program that keeps no secret in its environment,
// or that must read its own /proc/self files; a later HideEnvironment
// hides it again. Elsewhere than on Linux it does nothing.
func ExposeEnvironment() error {
	hiding.mu.Lock()
	defer hiding.mu.Unlock()
	hiding.exposed = true
	if !hiding.hidden {
		return nil
	}
	if err := setDumpable(true); err != nil {
		return fmt.Errorf("expose the environment: %w", err)
	}
	hiding.hidden = false
	return nil
}

// hideByDefault hides the environment before a tool process starts,
// unless it is hidden already or ExposeEnvironment opted out. An error
// means the process must not start: its tool could read the secrets.
func hideByDefault() error {
	hiding.mu.Lock()
	defer hiding.mu.Unlock()
	if hiding.hidden || hiding.exposed {
		return nil
	}
	if err := setDumpable(false); err != nil {
		return fmt.Errorf("hide the environment from the tool's process (tools.ExposeEnvironment opts out): %w", err)
	}
	hiding.hidden = true
	return nil
}
