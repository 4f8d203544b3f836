package tools

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// pipeGrace bounds how long the output of a finished process is drained: a
// descendant that left the process group (setsid) may hold the pipes open.
const pipeGrace = time.Second

// procSpec is one process to run.
type procSpec struct {
	path      string   // program, resolved by the caller
	args      []string // arguments after argv[0]
	dir       string
	env       []string // the complete environment; nothing is inherited
	stdin     string   // empty: /dev/null
	timeout   time.Duration
	maxOutput int // bytes kept of stdout and of stderr, each
}

// procResult is what happened to a process.
type procResult struct {
	exitCode int    // -1 when it was killed by a signal or did not start
	signal   string // the signal that ended it, if any
	stdout   capture
	stderr   capture
	timedOut bool  // the spec's timeout ended it
	ctxErr   error // the caller's context ended it
	startErr error // it did not start
}

// runProcess runs a process in its own process group and waits for it. On
// timeout or when ctx is done the whole group is killed with SIGKILL; once
// the leader exits, whatever is left of the group is killed too, so no
// background child outlives the call. A descendant that moved itself to
// another process group or session is out of reach.
func runProcess(ctx context.Context, s procSpec) procResult {
	res := procResult{exitCode: -1, stdout: capture{max: s.maxOutput}, stderr: capture{max: s.maxOutput}}
	runCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	outR, outW, err := os.Pipe()
	if err != nil {
		res.startErr = err
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		res.startErr = err
		return res
	}

	cmd := exec.CommandContext(runCtx, s.path, s.args...)
	cmd.Dir = s.dir
	cmd.Env = append([]string{}, s.env...) // never nil: nil would inherit the parent's
	if s.stdin != "" {
		cmd.Stdin = strings.NewReader(s.stdin)
		cmd.WaitDelay = pipeGrace // stdin is copied by exec; don't wait on it forever
	}
	// Real files, not writers: exec starts no copying goroutines, so Wait
	// returns when the leader exits even if a descendant holds the pipes.
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }

	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		res.startErr = err
		return res
	}
	outW.Close()
	errW.Close()
	drained := make(chan struct{}, 2)
	go drain(&res.stdout, outR, drained)
	go drain(&res.stderr, errR, drained)

	waitErr := cmd.Wait()
	killGroup(cmd.Process.Pid) // background children of a leader that exited

	grace := time.NewTimer(pipeGrace)
	defer grace.Stop()
	for range 2 {
		select {
		case <-drained:
		case <-grace.C:
			outR.Close() // unblocks the readers
			errR.Close()
			<-drained
		}
	}
	outR.Close()
	errR.Close()

	if st := cmd.ProcessState; st != nil {
		res.exitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.signal = ws.Signal().String()
		}
	}
	switch {
	case ctx.Err() != nil:
		res.ctxErr = ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.timedOut = true
	case waitErr != nil && res.exitCode == -1 && res.signal == "":
		res.startErr = waitErr
	}
	return res
}

// drain copies r into c until EOF or until r is closed.
func drain(c *capture, r io.Reader, done chan<- struct{}) {
	io.Copy(c, r)
	done <- struct{}{}
}

// killGroup sends SIGKILL to the process group led by pid. A group that is
// already gone (ESRCH) is not an error.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
