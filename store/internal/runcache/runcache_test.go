package runcache

import (
	"fmt"
	"testing"

	"github.com/stepwise-agent/stepwise/store/internal/codec"
)

// TestThousandRunsRemembered: the tails of 1,000 runs written at once all
// stay remembered (a codec.RunCache alone keeps 256), and a forgotten one
// is gone.
func TestThousandRunsRemembered(t *testing.T) {
	var c Cache
	for i := range 1000 {
		c.SetTail(fmt.Sprint("run", i), codec.Tail{RK: int64(i), Seq: i})
	}
	for i := range 1000 {
		got, ok := c.Tail(fmt.Sprint("run", i))
		if !ok || got.RK != int64(i) || got.Seq != i {
			t.Fatalf("run%d: %+v, %v", i, got, ok)
		}
	}
	c.ForgetTail("run7")
	if _, ok := c.Tail("run7"); ok {
		t.Fatal("run7 still remembered")
	}
}
