//go:build linux || darwin || freebsd

package tools

import "syscall"

// diskSpace is the size of the file system holding path and the bytes
// free to an unprivileged user, in bytes.
func diskSpace(path string) (total, free uint64, err error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		return 0, 0, err
	}
	// The fields' types differ between systems (Bavail is signed on
	// FreeBSD, where root's reserve can make it negative).
	return uint64(fs.Blocks) * uint64(fs.Bsize), uint64(max(int64(fs.Bavail), 0)) * uint64(fs.Bsize), nil
}
