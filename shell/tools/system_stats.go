package tools

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/shell"
)

// SystemStatsOptions configures system_stats. Zero values mean the defaults.
type SystemStatsOptions struct {
	// Disk is the path whose file system is measured (default "/").
	Disk string
	// Sample is how long the CPU is watched (default 200ms).
	Sample time.Duration
	// Proc is where /proc is (default "/proc"; tests point it elsewhere).
	Proc string
}

type systemStats struct{ opts SystemStatsOptions }

// SystemStats returns the system_stats tool (AI Battle's): the host's CPU,
// memory and disk use, as key=value percentages, e.g.
// "cpu=12.5% memory=41.0% disk=73.2%" (then the totals). It reads /proc
// and statfs(2), so it is Linux-only; elsewhere a call fails, saying so.
// Not idempotent in the sense the shell means (its answer changes), but it
// has no effect: it is declared idempotent so that a resumed run may ask
// again.
func SystemStats(opts SystemStatsOptions) shell.Tool {
	if opts.Disk == "" {
		opts.Disk = "/"
	}
	if opts.Sample <= 0 {
		opts.Sample = 200 * time.Millisecond
	}
	if opts.Proc == "" {
		opts.Proc = "/proc"
	}
	return &systemStats{opts: opts}
}

func (t *systemStats) Spec() core.Tool {
	return core.Tool{
		Name:        "system_stats",
		Description: "The host's CPU, memory and disk use, as percentages (key=value).",
		Parameters:  objectSchema(nil),
		Idempotent:  true,
	}
}

func (t *systemStats) Run(ctx context.Context, call core.ToolCall, _ shell.RunContext) core.ToolResult {
	var none struct{}
	if err := decodeArgs(call, &none); err != nil {
		return failf(call, "%v", err)
	}
	idle0, total0, err := t.cpuTimes()
	if err != nil {
		return failf(call, "%v", err)
	}
	select {
	case <-ctx.Done():
		return interrupted(call, ctx.Err())
	case <-time.After(t.opts.Sample):
	}
	idle1, total1, err := t.cpuTimes()
	if err != nil {
		return failf(call, "%v", err)
	}
	cpu := 0.0
	if d := total1 - total0; d > 0 {
		cpu = 100 * float64(d-(idle1-idle0)) / float64(d)
	}
	memTotal, memAvail, err := t.memory()
	if err != nil {
		return failf(call, "%v", err)
	}
	diskTotal, diskFree, err := diskSpace(t.opts.Disk)
	if err != nil {
		return failf(call, "disk %s: %v", t.opts.Disk, err)
	}
	out := fmt.Sprintf("cpu=%.1f%% memory=%.1f%% disk=%.1f%% memory_total=%s disk_total=%s",
		cpu, percent(memTotal-memAvail, memTotal), percent(diskTotal-diskFree, diskTotal), bytesText(memTotal), bytesText(diskTotal))
	return core.ToolResult{CallID: call.ID, Output: out}
}

// cpuTimes reads the idle and total jiffies of all CPUs from /proc/stat.
func (t *systemStats) cpuTimes() (idle, total uint64, err error) {
	b, err := os.ReadFile(t.opts.Proc + "/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("cpu: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("cpu: %s/stat has no cpu line", t.opts.Proc)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("cpu: %s/stat: %v", t.opts.Proc, err)
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total, nil
}

// memory reads MemTotal and MemAvailable (bytes) from /proc/meminfo.
func (t *systemStats) memory() (total, avail uint64, err error) {
	b, err := os.ReadFile(t.opts.Proc + "/meminfo")
	if err != nil {
		return 0, 0, fmt.Errorf("memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemTotal:":
			total = n * 1024
		case "MemAvailable:":
			avail = n * 1024
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("memory: %s/meminfo has no MemTotal", t.opts.Proc)
	}
	return total, avail, nil
}

func percent(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// bytesText writes n bytes in GiB (or MiB under one GiB), one decimal.
func bytesText(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
}
