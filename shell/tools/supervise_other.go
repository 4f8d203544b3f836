//go:build !linux

package tools

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// Supervisor watches over one command prepared by Supervise. On Linux a
// supervisor process kills everything the command started (see the Linux
// documentation); here the command runs in its own process group, which
// Kill and the end of the command kill. A process that leaves the group
// (setsid) or outlives the caller escapes.
//
// Its methods are safe for concurrent use.
type Supervisor struct {
	cmd *exec.Cmd
}

// Supervise prepares cmd, which must not have been started, to run in its
// own process group. SysProcAttr and ExtraFiles must be unset. It returns
// cmd.Err if that is set. A command made with exec.CommandContext is
// killed with Kill when its context is done. Call cmd.Start, then Started,
// then cmd.Wait.
func Supervise(cmd *exec.Cmd, _ *SuperviseOptions) (*Supervisor, error) {
	switch {
	case cmd.Err != nil:
		return nil, cmd.Err
	case cmd.Process != nil:
		return nil, errors.New("supervise: the command has already started")
	case cmd.SysProcAttr != nil || len(cmd.ExtraFiles) > 0:
		return nil, errors.New("supervise: the command must not set SysProcAttr or ExtraFiles")
	}
	s := &Supervisor{cmd: cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Cancel != nil {
		cmd.Cancel = s.Kill
	}
	return s, nil
}

// Started must be called once cmd.Start has returned; here it does nothing.
func (s *Supervisor) Started() {}

// Kill kills the command's process group.
func (s *Supervisor) Kill() error {
	if s.cmd.Process == nil {
		return nil
	}
	return killGroup(s.cmd.Process.Pid)
}

// wait kills what is left of the command's group, once cmd.Wait has
// returned st, and returns how the command ended.
func (s *Supervisor) wait(st *os.ProcessState, waitErr error) procExit {
	s.Kill() //nolint:errcheck // background children of a command that exited
	e := procExit{code: -1}
	if st != nil {
		e.code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.signal = ws.Signal().String()
		}
	}
	if waitErr != nil && e.code == -1 && e.signal == "" {
		e.err = waitErr
	}
	return e
}
