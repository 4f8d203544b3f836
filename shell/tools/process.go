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

// pipeGrace bounds how long the output of a finished process is drained,
// in case a descendant that could not be killed holds the pipes open.
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
	// onLine, when set, is told each line of stdout as it arrives
	// (streamed partial output: live, never stored).
	onLine func(line string)
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

// runProcess runs a process under a Supervisor and waits for it. On
// timeout or when ctx is done, the process and everything it started are
// killed with SIGKILL; once the process exits, whatever it started is
// killed too, so no background child outlives the call. On Linux that
// includes processes that started their own session or were orphaned, and
// the call's processes die with this one, even when it is killed with
// SIGKILL; elsewhere the process group is killed.
func runProcess(ctx context.Context, s procSpec) procResult {
	res := procResult{exitCode: -1, stdout: capture{max: s.maxOutput}, stderr: capture{max: s.maxOutput}}
	runCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()

	// Real files, not writers: exec starts no copying goroutines, so Wait
	// returns when the process is gone even if a descendant that could not
	// be killed holds the pipes.
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
	cmd.Stdout, cmd.Stderr = outW, errW
	var stdin io.WriteCloser
	sup, err := Supervise(cmd, nil)
	if err == nil {
		if s.stdin != "" {
			stdin, err = cmd.StdinPipe() // closed by Wait, in case nothing reads it
		}
		if err == nil {
			err = cmd.Start()
		}
		sup.Started()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		res.startErr = err
		return res
	}
	if stdin != nil {
		go func() {
			io.WriteString(stdin, s.stdin) //nolint:errcheck // a process need not read its input
			stdin.Close()
		}()
	}
	drained := make(chan struct{}, 2)
	var out io.Writer = &res.stdout
	if s.onLine != nil {
		out = &lineTee{w: &res.stdout, onLine: s.onLine}
	}
	go drain(out, outR, drained)
	go drain(&res.stderr, errR, drained)

	waitErr := cmd.Wait()
	exit := sup.wait(cmd.ProcessState, waitErr) // nothing of the call is left running

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

	res.exitCode, res.signal = exit.code, exit.signal
	switch {
	case ctx.Err() != nil:
		res.ctxErr = ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.timedOut = true
	case exit.err != nil:
		res.startErr = exit.err
	}
	return res
}

// drain copies r into w until EOF or until r is closed.
func drain(w io.Writer, r io.Reader, done chan<- struct{}) {
	io.Copy(w, r)
	if t, ok := w.(*lineTee); ok {
		t.flush()
	}
	done <- struct{}{}
}

// maxLiveLine bounds a streamed line; the rest of it is not streamed (the
// stored output keeps it).
const maxLiveLine = 300

// lineTee writes to w and tells onLine each complete line on the way.
type lineTee struct {
	w       io.Writer
	onLine  func(string)
	partial []byte
}

func (t *lineTee) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	for _, b := range p {
		if b == '\n' {
			t.flush()
			continue
		}
		if len(t.partial) < maxLiveLine {
			t.partial = append(t.partial, b)
		}
	}
	return n, err
}

// flush tells the line held so far, if it has more than white space.
func (t *lineTee) flush() {
	line := strings.TrimRight(strings.ToValidUTF8(string(t.partial), "\uFFFD"), "\r \t")
	t.partial = t.partial[:0]
	if strings.TrimSpace(line) != "" {
		t.onLine(line)
	}
}

// killGroup sends SIGKILL to the process group led by pid. A group that is
// already gone (ESRCH) is not an error.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
