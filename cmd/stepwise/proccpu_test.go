package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPU time of processes on this host, from /proc (Linux), for the
// benchmarks that set a figure per CPU second beside their throughput.

// clockTicks is the unit of /proc/PID/stat's times: USER_HZ, 100 on every
// Linux architecture Go builds for (sysconf(_SC_CLK_TCK); the kernel
// scales its own HZ to it).
const clockTicks = 100

// procStat is what procCPU reads of /proc/PID/stat.
type procStat struct {
	comm string
	ppid int
	// utime+stime: the process's own CPU; cutime+cstime: its waited-for
	// children's, once they exited.
	own, children float64 // seconds
}

// readProcStat reads /proc/PID/stat (see proc(5): comm is field 2, in
// parentheses and possibly with spaces; ppid field 4; utime, stime,
// cutime, cstime fields 14 to 17, in clock ticks).
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	rest := strings.Fields(s[closing+1:]) // rest[0] is field 3
	if len(rest) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(rest)+2)
	}
	field := func(n int) float64 { v, _ := strconv.ParseFloat(rest[n-3], 64); return v }
	ppid, _ := strconv.Atoi(rest[1])
	return procStat{comm: s[open+1 : closing], ppid: ppid,
		own: (field(14) + field(15)) / clockTicks, children: (field(16) + field(17)) / clockTicks}, nil
}

// processCPU is the CPU seconds pid has used so far (user and system).
func processCPU(pid int) (float64, error) {
	st, err := readProcStat(pid)
	return st.own, err
}

// machineCPU is the CPU seconds all processors of this host have been
// busy so far, summed: /proc/stat's first line less idle and iowait.
func machineCPU() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	busy := 0.0
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q", line)
		}
		busy += n
	}
	return busy / clockTicks, nil
}

// postgresCPU is the CPU seconds used so far by the PostgreSQL servers on
// this host: every process named postgres (the postmaster, its background
// processes and the backends, one per connection), plus, for each
// postmaster (a postgres process whose parent is not one), its exited
// children's, which it has waited for. A backend that exits between two
// readings is therefore counted whole, in the second reading through its
// postmaster. ok is false when no postgres process is visible (a server
// on another host, or in a container of its own).
func postgresCPU() (seconds float64, ok bool, err error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, false, err
	}
	procs := map[int]procStat{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.comm != "postgres" {
			continue // gone since the listing, or not PostgreSQL
		}
		procs[pid] = st
	}
	for _, st := range procs {
		seconds += st.own
		if _, child := procs[st.ppid]; !child {
			seconds += st.children
		}
	}
	return seconds, len(procs) > 0, nil
}
