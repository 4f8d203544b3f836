package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/stepwise-agent/stepwise/core"
)

// Full-text search uses SQLite's FTS4 (built into go-sqlite3 by default;
// FTS5 would need every build to pass -tags sqlite_fts5, see
// docs/adr/0004-store-layout.md) and ranks with Okapi BM25 computed here from
// matchinfo, per column with weights, as FTS5's bm25() does.

// BM25 parameters and column weights (name, type, observations).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// maxQueryTerms caps how many words of a query are searched for.
	maxQueryTerms = 32
	// defaultSearchLimit applies when MemorySearch is given limit <= 0.
	defaultSearchLimit = 5
)

var columnWeights = [3]float64{3, 1, 1}

// MemorySearch returns the entities of namespace ns (every namespace for
// core.AllNamespaces) that match query best,
// at most limit (5 when limit <= 0), best first: by BM25 score (Score, higher
// is better), then by name. The query is free text: its words (letters and
// digits; everything else separates words) are searched for, any of them
// matching, so quotes, operators and wildcards in it are never syntax. A
// query with no words matches nothing.
func (s *SQLite) MemorySearch(ctx context.Context, ns, query string, limit int) ([]core.MemoryHit, error) {
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("memory %s: search: %w", ns, err)
	}
	defer rollback(tx)
	rows, err := tx.QueryContext(ctx, `SELECT e.id, e.name, matchinfo(mem_fts, 'pcnalx') FROM mem_fts JOIN mem_entities e ON e.id = mem_fts.docid
		WHERE mem_fts MATCH ? AND (e.ns = ? OR ? = '*')`, ftsQuery(terms), ns, ns)
	if err != nil {
		return nil, fmt.Errorf("memory %s: search: %w", ns, err)
	}
	type hit struct {
		id    int64
		name  string
		score float64
	}
	var hits []hit
	for rows.Next() {
		var h hit
		var info []byte
		if err := rows.Scan(&h.id, &h.name, &info); err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory %s: search: %w", ns, err)
		}
		if h.score, err = bm25(info); err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory %s: search: %w", ns, err)
		}
		hits = append(hits, h)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("memory %s: search: %w", ns, err)
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].name < hits[j].name
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]core.MemoryHit, 0, len(hits))
	for _, h := range hits {
		e, err := loadEntity(ctx, tx, h.id)
		if err != nil {
			return nil, fmt.Errorf("memory %s: search: %w", ns, err)
		}
		out = append(out, core.MemoryHit{Entity: e, Score: h.score})
	}
	return out, nil
}

// queryTerms splits free text into distinct words, case-insensitively, in
// first-seen order.
func queryTerms(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		k := strings.ToLower(w)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, w)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}

// ftsQuery quotes each word (words hold no quote) and ORs them.
func ftsQuery(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"`
	}
	return strings.Join(quoted, " OR ")
}

// bm25 scores one row from its matchinfo 'pcnalx' blob.
func bm25(info []byte) (float64, error) {
	v := make([]uint32, len(info)/4)
	for i := range v {
		v[i] = binary.NativeEndian.Uint32(info[4*i:])
	}
	if len(v) < 3 {
		return 0, fmt.Errorf("matchinfo: %d values", len(v))
	}
	p, c, n := int(v[0]), int(v[1]), float64(v[2])
	if c != len(columnWeights) || len(v) != 3+2*c+3*p*c {
		return 0, fmt.Errorf("matchinfo: %d values for %d phrases, %d columns", len(v), p, c)
	}
	avg, length, x := v[3:3+c], v[3+c:3+2*c], v[3+2*c:]
	score := 0.0
	for i := 0; i < p; i++ {
		for j := 0; j < c; j++ {
			k := 3 * (i*c + j)
			tf, docs := float64(x[k]), float64(x[k+2])
			if tf == 0 {
				continue
			}
			idf := math.Log((n - docs + 0.5) / (docs + 0.5))
			if idf <= 0 {
				idf = 1e-6
			}
			a := math.Max(float64(avg[j]), 1)
			score += columnWeights[j] * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(length[j])/a))
		}
	}
	return score, nil
}
