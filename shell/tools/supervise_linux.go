//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// superviseEnv, set to superviseMode, starts this executable as a
// supervisor instead of its program (see supervisor_linux.go).
const (
	superviseEnv  = "STEPWISE_TOOLS_SUPERVISOR"
	superviseMode = "v1"
)

// superviseSpec is the command a supervisor runs, sent as JSON on its
// control pipe (not in its argv or environment: the command's environment
// may hold secrets, and argv is readable by every user).
type superviseSpec struct {
	Path      string        `json:"path"`
	Args      []string      `json:"args"` // argv, argv[0] included
	Dir       string        `json:"dir,omitempty"`
	Env       []string      `json:"env"`
	TermGrace time.Duration `json:"term_grace"`
}

// report is one line a supervisor writes on its report pipe: the pid of
// the command once it started, then either its wait status or why it did
// not start.
type report struct {
	Pid   int     `json:"pid,omitempty"`
	Wait  *uint32 `json:"wait,omitempty"`
	Error string  `json:"error,omitempty"`
}

// Supervisor watches over one command prepared by Supervise. On Linux the
// command runs under a supervisor process: this executable started again
// from /proc/self/exe, in a mode the init function of this package selects
// before the program would start. The supervisor makes itself a child
// subreaper, so that every process the command starts stays below it, even
// one that calls setsid or whose parent exits (a double fork); it starts
// the command in its own process group without the capabilities that read
// other processes' memory (CAP_SYS_PTRACE and others), and kills
// everything left below it, then exits, when any of these happens:
//
//   - the command's process exits (background children do not outlive it);
//   - the caller calls Kill (timeouts, cancellation);
//   - the caller dies, even by SIGKILL: the supervisor reads EOF on its
//     control pipe, and gets SIGHUP as its parent-death signal;
//   - the supervisor gets SIGTERM or SIGINT: it passes the signal on to the
//     command's process and waits SuperviseOptions.TermGrace for it first.
//
// Elsewhere the command runs in its own process group, which Kill and the
// end of the command kill; a process that leaves the group escapes.
//
// Its methods are safe for concurrent use.
type Supervisor struct {
	cmd     *exec.Cmd
	ctl     *os.File      // our end of the control pipe: closing it kills the call
	theirs  []*os.File    // the supervisor's ends of both pipes, closed by Started
	reports *os.File      // our end of the report pipe
	done    chan struct{} // closed when the report pipe is at EOF: the supervisor is gone

	startOnce, ctlOnce sync.Once

	mu    sync.Mutex
	pid   int     // the command's process, once reported
	final *report // the last report (wait status or error), if any
}

// Supervise prepares cmd, which must not have been started, to run under a
// supervisor (see Supervisor). Set Path, Args, Env, Dir and the standard
// streams first, as for any command; they mean what they mean to exec, and
// the streams reach the command as they are. SysProcAttr and ExtraFiles
// must be unset: Supervise sets them for the supervisor. It returns cmd.Err
// if that is set, and an error if Path (relative to Dir) is not an
// executable file, as Start would. A command made with exec.CommandContext
// is killed with Kill when its context is done. Do not set cmd.WaitDelay:
// when it expires, exec kills the supervisor with SIGKILL, before it can
// clean up. Unless ExposeEnvironment opted out, the first call hides this
// process's environment from the command (HideEnvironment), and an error
// doing so is returned: the command must not start.
//
// Then call cmd.Start (or hand cmd to code that does), Started once Start
// has returned, and cmd.Wait as usual: Wait returns once the command and
// everything it started are gone. The supervisor exits with the command's
// status (128+n when signal n killed it; 127 or 126 when it could not be
// started, like env(1), with the reason on the command's stderr).
func Supervise(cmd *exec.Cmd, opts *SuperviseOptions) (*Supervisor, error) {
	switch {
	case cmd.Err != nil:
		return nil, cmd.Err
	case cmd.Process != nil:
		return nil, errors.New("supervise: the command has already started")
	case cmd.SysProcAttr != nil || len(cmd.ExtraFiles) > 0:
		return nil, errors.New("supervise: the command must not set SysProcAttr or ExtraFiles")
	}
	if err := checkExecutable(cmd.Path, cmd.Dir); err != nil {
		return nil, err
	}
	if err := hideByDefault(); err != nil {
		return nil, err
	}
	spec, err := json.Marshal(superviseSpec{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Environ(), TermGrace: opts.termGrace()})
	if err != nil {
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, fmt.Errorf("supervise: %w", err)
	}
	s := &Supervisor{cmd: cmd, ctl: ctlW, theirs: []*os.File{ctlR, repW}, reports: repR, done: make(chan struct{})}

	// The supervisor keeps the caller's working directory, so that a
	// relative Dir or Path means what it means to exec.
	cmd.Path = "/proc/self/exe"
	cmd.Args = []string{"stepwise-supervisor"}
	// GORACE: a race-detector build otherwise sleeps a second at exit.
	cmd.Env = []string{superviseEnv + "=" + superviseMode, "GORACE=atexit_sleep_ms=0"}
	cmd.Dir = ""
	cmd.ExtraFiles = []*os.File{ctlR, repW} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGHUP}
	if cmd.Cancel != nil {
		cmd.Cancel = s.Kill
	}
	// The supervisor reads the spec when it starts. A goroutine writes it,
	// since it may not fit in the pipe; the write fails once the
	// supervisor's end is closed, if it never read it.
	go ctlW.Write(spec) //nolint:errcheck // the supervisor reports a short spec
	// Reading from now on also keeps s, and so the control pipe, from the
	// garbage collector until the supervisor is gone, however little of s
	// the caller keeps.
	go s.read()
	return s, nil
}

// checkExecutable reports why path, relative to dir, cannot be run: it
// does not exist, or is a directory or not executable. The supervisor would
// find out too, but only once it runs, and could only say so on the
// command's stderr and in its report.
func checkExecutable(path, dir string) error {
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return &fs.PathError{Op: "exec", Path: path, Err: fs.ErrPermission}
	}
	return nil
}

// Started must be called once cmd.Start has returned, whether or not it
// succeeded: it closes this process's copies of the supervisor's pipe ends.
func (s *Supervisor) Started() {
	s.startOnce.Do(func() {
		for _, f := range s.theirs {
			f.Close()
		}
		if s.cmd.Process == nil {
			s.closeControl()
		}
	})
}

// Kill tells the supervisor to kill the command and everything it started,
// and returns at once; cmd.Wait returns when they are gone. If the
// supervisor itself was killed before it could clean up, Kill kills what
// is left of the command's process group.
func (s *Supervisor) Kill() error {
	s.closeControl()
	select {
	case <-s.done:
		return s.killOrphans()
	default:
		return nil
	}
}

// killOrphans kills the command's process group when the supervisor ended
// without reporting how the command ended, so without cleaning up (only
// SIGKILL does that). The command itself died with it (its parent-death
// signal); the rest of its group may still run.
func (s *Supervisor) killOrphans() error {
	s.mu.Lock()
	pid, final := s.pid, s.final
	s.mu.Unlock()
	if pid > 0 && final == nil {
		return killGroup(pid)
	}
	return nil
}

func (s *Supervisor) closeControl() {
	s.ctlOnce.Do(func() { s.ctl.Close() })
}

// read takes in the supervisor's reports until it exits.
func (s *Supervisor) read() {
	defer close(s.done)
	dec := json.NewDecoder(s.reports)
	for {
		var r report
		if err := dec.Decode(&r); err != nil {
			break
		}
		s.mu.Lock()
		if r.Pid > 0 {
			s.pid = r.Pid
		}
		if r.Wait != nil || r.Error != "" {
			s.final = &r
		}
		s.mu.Unlock()
	}
	io.Copy(io.Discard, s.reports) //nolint:errcheck // to EOF, after a report we could not read
	s.reports.Close()
	s.closeControl() // the supervisor is gone; nothing is left to kill
}

// wait returns how the command ended, once cmd.Wait has returned st.
func (s *Supervisor) wait(st *os.ProcessState, waitErr error) procExit {
	if st == nil {
		return procExit{code: -1, err: waitErr}
	}
	<-s.done // at EOF already: the supervisor has exited
	s.mu.Lock()
	final := s.final
	s.mu.Unlock()
	switch {
	case final != nil && final.Error != "":
		return procExit{code: -1, err: errors.New(final.Error)}
	case final != nil:
		return exitOf(syscall.WaitStatus(*final.Wait))
	}
	s.killOrphans()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return procExit{code: -1, signal: ws.Signal().String()}
	}
	return procExit{code: -1, err: fmt.Errorf("the supervisor ended without a report (%v)", st)}
}

// exitOf reads a wait status the way os.ProcessState does.
func exitOf(ws syscall.WaitStatus) procExit {
	switch {
	case ws.Exited():
		return procExit{code: ws.ExitStatus()}
	case ws.Signaled():
		return procExit{code: -1, signal: ws.Signal().String()}
	}
	return procExit{code: -1, err: fmt.Errorf("unexpected wait status %#x", uint32(ws))}
}
