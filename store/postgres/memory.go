package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Memory is a graph per namespace: entities (unique by name) with ordered
// observations, and typed relations between them. Nothing is ever removed.
// Writers of one namespace serialize on a transaction-scoped advisory lock
// (as SQLite's writers serialize on its write lock), so that an entity's
// observations are numbered without gaps or races.

// memoryLock is the first key of a namespace's advisory lock; the second
// is the hash of the namespace.
const memoryLock = 0x73776d6d // "swmm"

// entityByName finds an entity of namespace $1 by name ($2) through the
// unique index on (ns, sha256(name)).
const entityByName = `ns = $1 AND sha256(name) = sha256($2::bytea) AND name = $2::bytea`

// MemoryCreate stores entities and relations in namespace ns, in one
// transaction. An entity already stored is updated: a non-empty type
// replaces its type, and observations it does not have yet are appended in
// the order given. A relation is stored once; one whose endpoint is not an
// entity yet creates that entity bare (no type, no observations), so a model
// can relate things in any order. The result lists, in the order given, the
// entities created or changed (bare ones created for relations last) and
// counts the relations that were new.
func (s *Postgres) MemoryCreate(ctx context.Context, ns string, entities []core.Entity, relations []core.Relation) (core.MemoryCreated, error) {
	for i, e := range entities {
		if strings.TrimSpace(e.Name) == "" {
			return core.MemoryCreated{}, fmt.Errorf("memory %s: entity %d has no name", ns, i)
		}
	}
	for i, r := range relations {
		if strings.TrimSpace(r.From) == "" || strings.TrimSpace(r.To) == "" || strings.TrimSpace(r.Type) == "" {
			return core.MemoryCreated{}, fmt.Errorf("memory %s: relation %d needs from, to and type", ns, i)
		}
	}
	var out core.MemoryCreated
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(memoryLock), ns); err != nil {
			return err
		}
		changed := map[string]bool{}
		note := func(name string) {
			if !changed[name] {
				changed[name] = true
				out.Entities = append(out.Entities, name)
			}
		}
		var touched []int64
		var d totals
		for _, e := range entities {
			id, did, err := upsertEntity(ctx, tx, ns, e, &d)
			if err != nil {
				return err
			}
			if did {
				note(e.Name)
				touched = append(touched, id)
			}
		}
		for _, r := range relations {
			ids := [2]int64{}
			for i, name := range []string{r.From, r.To} {
				id, did, err := upsertEntity(ctx, tx, ns, core.Entity{Name: name}, &d)
				if err != nil {
					return err
				}
				if did {
					note(name)
					touched = append(touched, id)
				}
				ids[i] = id
			}
			ct, err := tx.Exec(ctx, `INSERT INTO mem_relations (from_id, to_id, type) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
				ids[0], ids[1], []byte(r.Type))
			if err != nil {
				return err
			}
			if ct.RowsAffected() > 0 {
				out.Relations++
			}
		}
		for _, id := range touched {
			if err := reindex(ctx, tx, id, &d); err != nil {
				return err
			}
		}
		if d == (totals{}) {
			return nil
		}
		_, err := tx.Exec(ctx, `UPDATE mem_totals SET n = n + $1, len_name = len_name + $2, len_type = len_type + $3, len_obs = len_obs + $4`,
			d.n, d.lens[0], d.lens[1], d.lens[2])
		return err
	})
	if err != nil {
		return core.MemoryCreated{}, fmt.Errorf("memory %s: create: %w", ns, err)
	}
	return out, nil
}

// totals are changes to mem_totals: entities added, words added per field.
type totals struct {
	n    int64
	lens [3]int64
}

// upsertEntity stores e, reporting its id and whether anything changed.
func upsertEntity(ctx context.Context, tx pgx.Tx, ns string, e core.Entity, d *totals) (id int64, changed bool, err error) {
	var typ []byte
	err = tx.QueryRow(ctx, `SELECT id, type FROM mem_entities WHERE `+entityByName, ns, []byte(e.Name)).Scan(&id, &typ)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		if err := tx.QueryRow(ctx, `INSERT INTO mem_entities (ns, name, type) VALUES ($1, $2, $3) RETURNING id`,
			ns, []byte(e.Name), []byte(e.Type)).Scan(&id); err != nil {
			return 0, false, err
		}
		changed = true
		d.n++
	case err != nil:
		return 0, false, err
	case e.Type != "" && e.Type != string(typ):
		if _, err := tx.Exec(ctx, `UPDATE mem_entities SET type = $1 WHERE id = $2`, []byte(e.Type), id); err != nil {
			return 0, false, err
		}
		changed = true
	}
	if len(e.Observations) == 0 {
		return id, changed, nil
	}
	// One round trip for all of them; they run in order, each numbered
	// after the ones before.
	b := &pgx.Batch{}
	for _, o := range e.Observations {
		b.Queue(`INSERT INTO mem_observations (entity_id, ord, text)
			SELECT $1, coalesce(max(ord), 0) + 1, $2 FROM mem_observations WHERE entity_id = $1 ON CONFLICT DO NOTHING`, id, []byte(o))
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	for range e.Observations {
		ct, err := br.Exec()
		if err != nil {
			return 0, false, err
		}
		if ct.RowsAffected() > 0 {
			changed = true
		}
	}
	return id, changed, br.Close()
}

// reindex rewrites the full-text fields of entity id (fts.go), adding the
// change of its lengths to d.
func reindex(ctx context.Context, tx pgx.Tx, id int64, d *totals) error {
	es, lens, err := loadEntities(ctx, tx, []int64{id})
	if err != nil {
		return err
	}
	if len(es) != 1 {
		return fmt.Errorf("entity %d: %w", id, store.ErrNotFound)
	}
	e := es[0]
	fields := [3][]string{ftsWords(e.Name), ftsWords(e.Type), ftsWords(strings.Join(e.Observations, "\n"))}
	for i, f := range fields {
		d.lens[i] += int64(len(f)) - lens[0][i]
	}
	_, err = tx.Exec(ctx, `UPDATE mem_entities SET fts_name = $1::text::tsvector, fts_type = $2::text::tsvector, fts_obs = $3::text::tsvector,
		len_name = $4, len_type = $5, len_obs = $6 WHERE id = $7`,
		tsvector(fields[0]), tsvector(fields[1]), tsvector(fields[2]),
		int64(len(fields[0])), int64(len(fields[1])), int64(len(fields[2])), id)
	return err
}

// loadEntities loads the entities with these ids, in that order (an id not
// found is left out), with the lengths of their indexed fields.
func loadEntities(ctx context.Context, q querier, ids []int64) ([]core.Entity, [][3]int64, error) {
	rows, err := q.Query(ctx, `SELECT e.id, e.name, e.type, e.len_name, e.len_type, e.len_obs,
		ARRAY(SELECT o.text FROM mem_observations o WHERE o.entity_id = e.id ORDER BY o.ord)
		FROM mem_entities e WHERE e.id = ANY ($1)`, ids)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	type loaded struct {
		e    core.Entity
		lens [3]int64
	}
	byID := map[int64]loaded{}
	for rows.Next() {
		var id int64
		var name, typ []byte
		var obs [][]byte
		var l loaded
		if err := rows.Scan(&id, &name, &typ, &l.lens[0], &l.lens[1], &l.lens[2], &obs); err != nil {
			return nil, nil, err
		}
		l.e = core.Entity{Name: string(name), Type: string(typ)}
		for _, o := range obs {
			l.e.Observations = append(l.e.Observations, string(o))
		}
		byID[id] = l
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	var es []core.Entity
	var lens [][3]int64
	for _, id := range ids {
		if l, ok := byID[id]; ok {
			es, lens = append(es, l.e), append(lens, l.lens)
		}
	}
	return es, lens, nil
}

// MemoryTraverse follows relations of type relation (any type when empty)
// outward from entity from, breadth first, up to depth hops (at least 1).
// Entities lists from first, then each entity in the order it was reached;
// Relations lists every relation followed. At each entity, relations are
// taken in order of type, then target name (byte order), so the result is
// deterministic. An unknown from is store.ErrNotFound. It reads one
// snapshot: one query per hop, then one for the entities.
func (s *Postgres) MemoryTraverse(ctx context.Context, ns, from, relation string, depth int) (core.MemoryTraversed, error) {
	if depth < 1 {
		depth = 1
	}
	var out core.MemoryTraversed
	what := "memory " + ns + ": traverse"
	err := s.inTx(ctx, what, readSnapshot, func(b *pgx.Batch) {
		b.Queue(`SELECT id FROM mem_entities WHERE `+entityByName, ns, []byte(from))
	}, func(br pgx.BatchResults, tx pgx.Tx) error {
		var start int64
		err := br.QueryRow().Scan(&start)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("memory %s: entity %q: %w", ns, from, store.ErrNotFound)
		}
		if err == nil {
			err = br.Close()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		type edge struct {
			from, to int64
			typ      []byte
			name     []byte
		}
		names := map[int64]string{start: from}
		order := []int64{start}
		seen := map[int64]bool{start: true}
		frontier := []int64{start}
		for hop := 0; hop < depth && len(frontier) > 0; hop++ {
			rows, err := tx.Query(ctx, `SELECT r.from_id, r.type, e.id, e.name FROM mem_relations r JOIN mem_entities e ON e.id = r.to_id
				WHERE r.from_id = ANY ($1) AND (octet_length($2::bytea) = 0 OR r.type = $2::bytea)`, frontier, []byte(relation))
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			byFrom := map[int64][]edge{}
			for rows.Next() {
				var e edge
				if err := rows.Scan(&e.from, &e.typ, &e.to, &e.name); err != nil {
					rows.Close()
					return fmt.Errorf("%s: %w", what, err)
				}
				byFrom[e.from] = append(byFrom[e.from], e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			var next []int64
			for _, n := range frontier {
				edges := byFrom[n]
				sort.Slice(edges, func(i, j int) bool {
					if c := bytes.Compare(edges[i].typ, edges[j].typ); c != 0 {
						return c < 0
					}
					return bytes.Compare(edges[i].name, edges[j].name) < 0
				})
				for _, e := range edges {
					out.Relations = append(out.Relations, core.Relation{From: names[n], To: string(e.name), Type: string(e.typ)})
					if !seen[e.to] {
						seen[e.to] = true
						names[e.to] = string(e.name)
						order = append(order, e.to)
						next = append(next, e.to)
					}
				}
			}
			frontier = next
		}
		es, _, err := loadEntities(ctx, tx, order)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		out.Entities = es
		return nil
	})
	if err != nil {
		return core.MemoryTraversed{}, err
	}
	return out, nil
}
