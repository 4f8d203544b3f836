package server

import (
	"os"
	"syscall"
)

// changeTime is fi's status change time (ctime) in nanoseconds, which any
// write, rename or link of the file moves; 0 when unknown.
func changeTime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
