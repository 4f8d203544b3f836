//go:build linux

package tools

import "golang.org/x/sys/unix"

// setDumpable sets this process's dumpable flag (see HideEnvironment).
func setDumpable(on bool) error {
	v := uintptr(0)
	if on {
		v = 1
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, v, 0, 0, 0)
}
