//go:build linux

package tools

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// HideEnvironment makes this process non-dumpable, so that the processes
// its tools start can read neither its environment, which holds the
// secrets it reads by name (API keys, header tokens), nor its memory:
// /proc/<pid>/environ, /proc/<pid>/mem and ptrace are then closed to
// every process without CAP_SYS_PTRACE, even one of the same user, and
// supervised tools never have that capability (see Supervisor). Call it
// once, at start, before any tool runs.
//
// It also stops core dumps of this process, and makes its /proc/<pid>
// files owned by root, so a process not run as root can no longer read
// its own /proc/self/io, for one. Elsewhere than on Linux it does nothing.
func HideEnvironment() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("hide the environment: %w", err)
	}
	return nil
}
