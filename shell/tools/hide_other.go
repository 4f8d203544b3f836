//go:build !linux

package tools

// setDumpable does nothing here: hiding the environment is done on Linux
// only (see HideEnvironment).
func setDumpable(bool) error { return nil }
