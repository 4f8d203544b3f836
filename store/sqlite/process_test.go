package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// The crash and concurrency tests run this test binary again as a child
// process (the standard os/exec helper-process pattern): with
// STEPWISE_STORE_HELPER set, TestHelperProcess does the child's work and
// exits.

const helperEnv = "STEPWISE_STORE_HELPER"

func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "append-forever":
		err = helperAppendForever(os.Getenv("STORE_PATH"), os.Getenv("STORE_RUN"))
	case "append":
		steps, _ := strconv.Atoi(os.Getenv("STORE_STEPS"))
		err = appendRuns(os.Getenv("STORE_PATH"), strings.Split(os.Getenv("STORE_RUNS"), ","), steps)
	default:
		err = fmt.Errorf("unknown helper mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperProcess starts this test binary as a helper in mode with env.
func helperProcess(t *testing.T, mode string, env ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// synthInitial is the initial state of the synthetic runs of these tests.
func synthInitial(id string) core.State {
	return baseState("question "+id, []core.Message{
		{Role: core.RoleSystem, Content: "be brief"},
		{Role: core.RoleUser, Content: "question " + id},
	})
}

// synth generates the checkpoints of the synthetic run id in order.
type synth struct {
	log []core.Message
	seq int
}

func newSynth(id string) *synth { return &synth{log: synthInitial(id).Messages} }

func (g *synth) next() store.Checkpoint {
	g.seq++
	var cp store.Checkpoint
	cp, g.log = turnStep(g.log, g.seq, 200)
	return cp
}

// synthRun yields the checkpoints 1..n of the synthetic run id.
func synthRun(id string, n int, fn func(store.Checkpoint) error) error {
	g := newSynth(id)
	for seq := 1; seq <= n; seq++ {
		if err := fn(g.next()); err != nil {
			return err
		}
	}
	return nil
}

// helperAppendForever appends steps to run id, printing each seq once it is
// committed, until killed.
func helperAppendForever(path, id string) error {
	s, err := Open(path, nil)
	if err != nil {
		return err
	}
	ctx := context.Background()
	last := 0
	latest, err := s.LoadLatest(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if _, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "crash", Initial: synthInitial(id)}); err != nil {
			return err
		}
		fmt.Println(0)
	case err != nil:
		return err
	default:
		last = latest.Seq
	}
	// The killed writer's lease is live for an hour: its process is gone,
	// so this one takes the run over, as the shell does for a dead holder.
	l, err := s.Acquire(ctx, id, store.LeaseRequest{Owner: "crash/1/x", TTL: time.Hour})
	if busy, ok := errors.AsType[*store.BusyError](err); ok {
		l, err = s.Acquire(ctx, id, store.LeaseRequest{Owner: "crash/1/x", TTL: time.Hour, TakeOver: &busy.Holder})
	}
	if err != nil {
		return err
	}
	return synthRun(id, 1<<30, func(cp store.Checkpoint) error {
		if cp.Seq <= last {
			return nil // written by an earlier child
		}
		if cp.Seq == last+1 {
			fmt.Println("ready") // holding the run, at its first new step
		}
		if err := s.Checkpoint(ctx, l, cp); err != nil {
			return err
		}
		_, err := fmt.Println(cp.Seq)
		return err
	})
}

// appendRuns appends steps checkpoints to each run, one goroutine per run.
func appendRuns(path string, ids []string, steps int) error {
	s, err := Open(path, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			ctx := context.Background()
			l, err := s.CreateRun(ctx, store.NewRun{ID: id, Agent: "concurrent", Initial: synthInitial(id), Owner: "concurrent/1/x", LeaseTTL: time.Hour})
			if errs[i] = err; err != nil {
				return
			}
			errs[i] = synthRun(id, steps, func(cp store.Checkpoint) error { return s.Checkpoint(ctx, l, cp) })
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// verifyRun checks that run id holds exactly steps 0..last, each equal to
// the synthetic run's, and returns last. Each step's head, action, result
// and message count are compared, and the whole state of the last step (so
// the cost stays linear in the run's length).
func verifyRun(t *testing.T, s *SQLite, id string) int {
	t.Helper()
	g := newSynth(id)
	var last store.StepRecord
	var want store.Checkpoint
	seen := 0
	err := s.Steps(context.Background(), id, func(rec store.StepRecord) error {
		if rec.Seq != seen {
			return fmt.Errorf("step %d, want %d", rec.Seq, seen)
		}
		seen++
		last = rec
		if rec.Seq == 0 {
			sameStep(t, rec, 0, synthInitial(id), nil, nil)
			return nil
		}
		want = g.next()
		got, exp := rec.State, want.Action.Next()
		if len(got.Messages) != len(exp.Messages) {
			return fmt.Errorf("step %d: %d messages, want %d", rec.Seq, len(got.Messages), len(exp.Messages))
		}
		got.Messages, exp.Messages = nil, nil
		if !bytes.Equal(encState(t, got), encState(t, exp)) || !bytes.Equal(encAction(t, rec.Action), encAction(t, want.Action)) ||
			!bytes.Equal(encResult(t, rec.Result), encResult(t, want.Result)) {
			return fmt.Errorf("step %d differs from what was saved", rec.Seq)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if last.Seq > 0 {
		sameStep(t, last, last.Seq, want.Action.Next(), want.Action, want.Result)
	}
	return seen - 1
}

func readLines(r io.Reader, into *[]int, mu *sync.Mutex, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if sc.Text() == "ready" {
			close(ready)
			continue
		}
		if n, err := strconv.Atoi(sc.Text()); err == nil {
			mu.Lock()
			*into = append(*into, n)
			mu.Unlock()
		}
	}
}
