package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stepwise-agent/stepwise/store"
)

// testListRunsWithoutConfig: a listing leaves Config and StartConfig empty
// (a listing reads what it shows, not the agents' sources) and reads them
// with Filter.WithConfig, the current one after an agent change; Run
// always reads them; the other fields are the same either way.
func testListRunsWithoutConfig(t *testing.T, h Harness) {
	ctx := context.Background()
	clock := NewClock()
	s := open(t, h, clock.Now)
	l, _ := create(t, s, "changed", nil)
	must(t, s.ChangeAgent(ctx, l, []byte(`{"v":2}`)))
	clock.Add(time.Second)
	create(t, s, "plain", nil)
	bare, err := s.ListRuns(ctx, store.Filter{})
	must(t, err)
	full, err := s.ListRuns(ctx, store.Filter{WithConfig: true})
	must(t, err)
	if len(bare) != 2 || len(full) != 2 {
		t.Fatalf("listed %d and %d runs, want 2", len(bare), len(full))
	}
	for i, r := range bare {
		if len(r.Config) != 0 || len(r.StartConfig) != 0 {
			t.Errorf("run %s listed with its config %q / %q", r.ID, r.Config, r.StartConfig)
		}
		f := full[i]
		one, err := s.Run(ctx, r.ID)
		must(t, err)
		if !bytes.Equal(f.Config, one.Config) || !bytes.Equal(f.StartConfig, one.StartConfig) || len(f.Config) == 0 {
			t.Errorf("run %s: WithConfig listed %q / %q, Run reads %q / %q", r.ID, f.Config, f.StartConfig, one.Config, one.StartConfig)
		}
		f.Config, f.StartConfig = r.Config, r.StartConfig
		if f.ID != r.ID || f.Input != r.Input || f.LastSeq != r.LastSeq || f.Status != r.Status || f.Lease != r.Lease || !f.Updated.Equal(r.Updated) {
			t.Errorf("the listings differ beyond the config:\n%+v\n%+v", r, f)
		}
	}
	if string(full[1].Config) != `{"v":2}` || string(full[1].StartConfig) != `{"v":1}` {
		t.Errorf("changed run: config %s, start config %s", full[1].Config, full[1].StartConfig)
	}
}
