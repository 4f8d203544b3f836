package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stepwise-agent/stepwise/core"
)

// TestObservationNumbersWithoutGaps: writers of one namespace serialize,
// so observations appended at once to one entity are numbered without
// gaps. (storetest's MemoryConcurrentCreate checks that none is lost.)
func TestObservationNumbersWithoutGaps(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_, err := s.MemoryCreate(ctx, "ns", []core.Entity{{Name: "e", Observations: []string{fmt.Sprint("obs ", i), "shared"}}},
				[]core.Relation{{From: "e", To: fmt.Sprint("f", i%4), Type: "r"}})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var n, gaps int
	if err := s.pool.QueryRow(ctx, `SELECT count(*), max(ord) - count(*) FROM mem_observations`).Scan(&n, &gaps); err != nil || n != 17 || gaps != 0 {
		t.Fatalf("%d observations, numbered with %d gaps (%v)", n, gaps, err)
	}
}

// TestFTSWords: the words of a text as the full-text index folds them, and
// the tsvector of words.
func TestFTSWords(t *testing.T) {
	for text, want := range map[string]string{
		"Café de Flore":          "cafe de flore",
		"NAÏVE coffee, crème":    "naive coffee creme",
		"e\u0301 combining":      "e combining",
		"東京 capital":             "東京 capital",
		"Ελληνικά κείμενο":       "ελληνικά κείμενο",
		"a_b a-b a.b 3.5 v2":     "a b a b a b 3 5 v2",
		"it's, \"quoted\" (x)":   "it s quoted x",
		"Straße ÅNGSTRÖM ½ ²":    "straße angstrom ½ ²",
		"":                       "",
		"  \t\n ":                "",
		"nul\x00between":         "nul between",
		"\xff invalid \xfe utf8": "invalid utf8",
	} {
		if got := strings.Join(ftsWords(text), " "); got != want {
			t.Errorf("ftsWords(%q) = %q, want %q", text, got, want)
		}
	}
	if got := tsvector([]string{"b", "a", "b", "it's", `back\slash`}); got != `'b':1,3 'a':2 'it''s':4 'back\\slash':5` {
		t.Errorf("tsvector: %s", got)
	}
}
