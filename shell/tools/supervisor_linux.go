//go:build linux

package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor's exit codes besides the command's own, as env(1) and
// timeout(1) use them.
const (
	exitSupervisorFailed = 125 // the supervisor could not do its job
	exitCannotRun        = 126 // the command was found but could not be run
	exitNotFound         = 127 // the command was not found
)

// init turns this process into a supervisor when Supervise started it (see
// Supervisor); it never returns then. In any other process it does nothing.
func init() {
	if os.Getenv(superviseEnv) == superviseMode {
		os.Exit(supervise())
	}
}

// supervise is the supervisor's program; it returns its exit code. It
// runs in init, on the main goroutine, which the runtime keeps on the main
// thread: capabilities are per thread, and the command is started from
// this one, which also lives as long as the process (the command's
// parent-death signal fires when the thread that started it ends).
func supervise() int {
	runtime.LockOSThread()
	parent := os.Getppid()
	closeOnExec() // the command gets its standard streams only
	ctl, rep := os.NewFile(3, "control"), os.NewFile(4, "report")
	out := json.NewEncoder(rep) // a failed write means the runner is gone: clean up all the same
	fail := func(code int, err error) int {
		out.Encode(report{Error: err.Error()})               //nolint:errcheck
		fmt.Fprintln(os.Stderr, "stepwise-supervisor:", err) //nolint:errcheck
		return code
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(exitSupervisorFailed, fmt.Errorf("make the supervisor non-dumpable: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(exitSupervisorFailed, fmt.Errorf("become a child subreaper: %w", err))
	}
	var spec superviseSpec
	if err := json.NewDecoder(ctl).Decode(&spec); err != nil {
		return fail(exitSupervisorFailed, fmt.Errorf("read the command: %w", err))
	}
	hangup := make(chan struct{}) // closed at EOF on the control pipe
	go func() {
		io.Copy(io.Discard, ctl) //nolint:errcheck // any end of the pipe is a hangup
		close(hangup)
	}()
	if err := dropCaps(droppedCaps); err != nil {
		return fail(exitSupervisorFailed, err)
	}
	if spec.Env == nil {
		spec.Env = []string{} // nil would pass on the supervisor's own
	}
	proc, err := os.StartProcess(spec.Path, spec.Args, &os.ProcAttr{
		Dir:   spec.Dir,
		Env:   spec.Env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		code := exitNotFound
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			code = exitCannotRun
		}
		return fail(code, err)
	}
	out.Encode(report{Pid: proc.Pid}) //nolint:errcheck
	detachStdio()

	exits := reapChildren()
	ws := awaitCommand(proc.Pid, exits, hangup, sigs, parent, spec.TermGrace)
	killRest(exits)
	w := uint32(ws)
	out.Encode(report{Wait: &w}) //nolint:errcheck
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return exitSupervisorFailed
}

// droppedCaps are the capabilities no process of a tool has. Each opens
// /proc/<pid>/environ, maps or mem of another process of the same user, or
// ptrace, even when that process is not dumpable (see HideEnvironment):
// CAP_SYS_PTRACE by design; CAP_SYS_ADMIN and CAP_PERFMON each open
// environ and maps too on the kernels we test on (6.18), as
// TestToolsCannotReadTheRunnersEnvironment shows when one is left.
var droppedCaps = []int{unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_PERFMON}

// dropCaps takes caps from this thread for good, before it starts the
// command: from its bounding set, so that no program run below it gets
// them back (a root process regains its bounding set at exec), and from its
// effective, permitted and inheritable sets. A process without CAP_SETPCAP
// cannot shrink its bounding set; that leaves a way back only for root, so
// then it fails.
func dropCaps(caps []int) error {
	for _, c := range caps {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		switch {
		case err == nil, errors.Is(err, unix.EINVAL): // EINVAL: a capability this kernel does not have
		case errors.Is(err, unix.EPERM) && os.Geteuid() != 0:
		default:
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for _, c := range caps {
		d, bit := &data[c/32], uint32(1)<<(c%32)
		d.Effective &^= bit
		d.Permitted &^= bit
		d.Inheritable &^= bit
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// closeOnExec marks every file descriptor above the standard streams
// close-on-exec: the supervisor's pipes, and files the runner inherited
// from its own parent without the flag.
func closeOnExec() {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	fds, _ := os.ReadDir("/proc/self/fd") // before Linux 5.11
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// detachStdio points the supervisor's standard streams at /dev/null once
// the command has its copies, so that the caller sees EOF on them as soon
// as the command's processes are gone.
func detachStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	for fd := range 3 {
		unix.Dup3(int(null.Fd()), fd, 0) //nolint:errcheck
	}
	null.Close()
}

// exited is a child the supervisor reaped.
type exited struct {
	pid int
	ws  syscall.WaitStatus
}

// reapChildren reaps every child of the supervisor (its own, and orphans
// it inherits as a subreaper) and sends them on the channel it returns,
// which it closes when the supervisor has no child left: then no process
// is left below it.
func reapChildren() <-chan exited {
	ch := make(chan exited, 16)
	go func() {
		defer close(ch)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, unix.WALL, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD
				return
			}
			ch <- exited{pid, ws}
		}
	}()
	return ch
}

// awaitCommand waits until the command's process (pid) has been reaped and
// returns its wait status. It kills everything below the supervisor when
// the runner hangs up or dies, and when the command outlives the grace
// after SIGTERM or SIGINT, which it passes on to the command.
func awaitCommand(pid int, exits <-chan exited, hangup <-chan struct{}, sigs <-chan os.Signal, parent int, grace time.Duration) syscall.WaitStatus {
	var graceOver <-chan time.Time
	for {
		select {
		case e, ok := <-exits:
			if !ok {
				return syscall.WaitStatus(0xff << 8) // cannot happen: pid is a child until reaped
			}
			if e.pid == pid {
				return e.ws
			}
		case <-hangup:
			hangup = nil
			killTree()
		case <-graceOver:
			graceOver = nil
			killTree()
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGHUP:
				// The parent-death signal; the thread that started us may
				// also have ended while the runner lives on.
				if os.Getppid() != parent {
					killTree()
				}
			default:
				syscall.Kill(pid, sig.(syscall.Signal)) //nolint:errcheck
				if graceOver == nil {
					graceOver = time.After(grace)
				}
			}
		}
	}
}

// killRest kills whatever is left below the supervisor once the command's
// process is gone, until no child is left, or nothing left can be killed.
func killRest(exits <-chan exited) {
	delay := time.Millisecond // usually no child is left, and exits closes first
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-exits:
			if !ok {
				return
			}
		case <-timer.C:
			if killTree() == 0 {
				return // zombies only, or processes we may not signal
			}
			delay = min(2*delay, 50*time.Millisecond)
			timer.Reset(delay)
		}
	}
}

// killTree sends SIGKILL to every live process below the supervisor and
// returns how many it signalled. As a subreaper the supervisor inherits
// the orphans of its subtree, so the tree holds every process the command
// started; a process forked while the tree is walked is orphaned when its
// parent dies and found by the next walk.
func killTree() int {
	procs := readProcs()
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	n := 0
	for queue := children[os.Getpid()]; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		queue = append(queue, children[pid]...)
		if p := procs[pid]; p.state != 'Z' && p.state != 'X' && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// procInfo is what killTree needs of a process.
type procInfo struct {
	ppid  int
	state byte
}

// readProcs reads the parent and state of every process in /proc.
func readProcs() map[int]procInfo {
	procs := map[int]procInfo{}
	d, err := os.Open("/proc")
	if err != nil {
		return procs
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		procs[pid] = procInfo{ppid: ppid, state: f[0][0]}
	}
	return procs
}
