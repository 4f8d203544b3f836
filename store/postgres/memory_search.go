package postgres

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
)

// Full-text search matches with PostgreSQL's tsvector/tsquery and a GIN
// index per field, and ranks with Okapi BM25 computed here exactly as the
// SQLite store computes it from FTS4's matchinfo: per field (name, type,
// observations) with weights, from each word's frequency in the entity's
// field, the number of entities whose field holds it, the field's length
// and its average length over all entities (mem_totals). Scores therefore
// agree with SQLite's wherever the tokenizers agree (fts.go).

// BM25 parameters and field weights (name, type, observations): SQLite's.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
	// maxQueryTerms caps how many words of a query are searched for.
	maxQueryTerms = 32
	// defaultSearchLimit applies when MemorySearch is given limit <= 0.
	defaultSearchLimit = 5
)

var columnWeights = [3]float64{3, 1, 1}

// searchSQL finds the entities of namespace $1 that hold any of the words
// $2 (the tsquery $3 ORs them), with, per word and field, how often the
// entity's field holds it.
const searchSQL = `WITH t AS (SELECT w, i FROM unnest($2::text[]) WITH ORDINALITY AS x(w, i))
	SELECT e.id, e.name, e.len_name, e.len_type, e.len_obs,
		ARRAY(SELECT coalesce((SELECT cardinality(u.positions) FROM unnest(e.fts_name) u WHERE u.lexeme = t.w), 0) FROM t ORDER BY t.i),
		ARRAY(SELECT coalesce((SELECT cardinality(u.positions) FROM unnest(e.fts_type) u WHERE u.lexeme = t.w), 0) FROM t ORDER BY t.i),
		ARRAY(SELECT coalesce((SELECT cardinality(u.positions) FROM unnest(e.fts_obs) u WHERE u.lexeme = t.w), 0) FROM t ORDER BY t.i)
	FROM mem_entities e
	WHERE (e.ns = $1 OR $1 = '*') AND (e.fts_name @@ $3::text::tsquery OR e.fts_type @@ $3::text::tsquery OR e.fts_obs @@ $3::text::tsquery)`

// statsSQL reads the totals and, per word ($1, as tsquery literals) and
// field, how many entities hold it (over all namespaces, as FTS4 counts).
const statsSQL = `WITH t AS (SELECT q::tsquery AS q, i FROM unnest($1::text[]) WITH ORDINALITY AS x(q, i))
	SELECT m.n, m.len_name, m.len_type, m.len_obs,
		ARRAY(SELECT (SELECT count(*) FROM mem_entities WHERE fts_name @@ t.q) FROM t ORDER BY t.i),
		ARRAY(SELECT (SELECT count(*) FROM mem_entities WHERE fts_type @@ t.q) FROM t ORDER BY t.i),
		ARRAY(SELECT (SELECT count(*) FROM mem_entities WHERE fts_obs @@ t.q) FROM t ORDER BY t.i)
	FROM mem_totals m`

// MemorySearch returns the entities of namespace ns (every namespace for
// core.AllNamespaces) that match query best,
// at most limit (5 when limit <= 0), best first: by BM25 score (Score, higher
// is better), then by name. The query is free text: its words (letters,
// digits and marks; everything else separates words) are searched for, any
// of them matching, so quotes, operators and wildcards in it are never
// syntax. A query with no words matches nothing. It reads one snapshot:
// the matches and statistics with BEGIN in one round trip, then the best
// entities.
func (s *Postgres) MemorySearch(ctx context.Context, ns, query string, limit int) ([]core.MemoryHit, error) {
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	var words, lits []string
	for _, term := range queryTerms(query) {
		if w := foldWord(term); w != "" && len(w) <= maxLexeme {
			words, lits = append(words, w), append(lits, quoteLexeme(w))
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	type hit struct {
		id    int64
		name  string
		score float64
	}
	var out []core.MemoryHit
	what := "memory " + ns + ": search"
	err := s.inTx(ctx, what, readSnapshot, func(b *pgx.Batch) {
		b.Queue(statsSQL, lits)
		b.Queue(searchSQL, ns, words, strings.Join(lits, " | "))
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var st bm25Stats
		if err := br.QueryRow().Scan(&st.n, &st.total[0], &st.total[1], &st.total[2], &st.docs[0], &st.docs[1], &st.docs[2]); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		var hits []hit
		for rows.Next() {
			var h hit
			var name []byte
			var m bm25Match
			if err := rows.Scan(&h.id, &name, &m.length[0], &m.length[1], &m.length[2], &m.tf[0], &m.tf[1], &m.tf[2]); err != nil {
				rows.Close()
				return fmt.Errorf("%s: %w", what, err)
			}
			h.name, h.score = string(name), bm25(&st, &m)
			hits = append(hits, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
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
		ids := make([]int64, len(hits))
		for i, h := range hits {
			ids[i] = h.id
		}
		es, _, err := loadEntities(ctx, tx, ids)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if len(es) != len(hits) {
			return fmt.Errorf("%s: %d entities of %d found", what, len(es), len(hits))
		}
		out = make([]core.MemoryHit, len(hits))
		for i, h := range hits {
			out[i] = core.MemoryHit{Entity: es[i], Score: h.score}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bm25Stats are the corpus statistics: how many entities, each field's
// total length, and per field and word how many entities hold the word.
type bm25Stats struct {
	n     int64
	total [3]int64
	docs  [3][]int64
}

// bm25Match is one entity's side: each field's length and, per field and
// word, how often it holds the word.
type bm25Match struct {
	length [3]int64
	tf     [3][]int64
}

// bm25 scores one entity, as the SQLite store scores a row from FTS4's
// matchinfo 'pcnalx': the average field length is rounded to an integer
// as FTS4 rounds it.
func bm25(st *bm25Stats, m *bm25Match) float64 {
	n := float64(st.n)
	var avg [3]float64
	for j := range avg {
		if st.n > 0 {
			avg[j] = float64(uint32((int64(uint32(st.total[j])) + st.n/2) / st.n))
		}
	}
	// Summed in SQLite's order (word by word, field by field), so that
	// equal inputs give equal floats.
	score := 0.0
	for i := range m.tf[0] {
		for j := range columnWeights {
			tf, docs := float64(m.tf[j][i]), float64(st.docs[j][i])
			if tf == 0 {
				continue
			}
			idf := math.Log((n - docs + 0.5) / (docs + 0.5))
			if idf <= 0 {
				idf = 1e-6
			}
			a := math.Max(avg[j], 1)
			score += columnWeights[j] * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(m.length[j])/a))
		}
	}
	return score
}

// queryTerms splits free text into distinct words, case-insensitively, in
// first-seen order (as the SQLite store does).
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
