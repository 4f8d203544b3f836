package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/stepwise-agent/stepwise/core"
	"github.com/stepwise-agent/stepwise/store"
)

// Memory is a graph per namespace: entities (unique by name) with ordered
// observations, and typed relations between them. Nothing is ever removed.

// MemoryCreate stores entities and relations in namespace ns, in one
// transaction. An entity already stored is updated: a non-empty type
// replaces its type, and observations it does not have yet are appended in
// the order given. A relation is stored once; one whose endpoint is not an
// entity yet creates that entity bare (no type, no observations), so a model
// can relate things in any order. The result lists, in the order given, the
// entities created or changed (bare ones created for relations last) and
// counts the relations that were new.
func (s *SQLite) MemoryCreate(ctx context.Context, ns string, entities []core.Entity, relations []core.Relation) (core.MemoryCreated, error) {
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
	err := s.write(ctx, "memory "+ns+": create", func(tx *wtx) error {
		changed := map[string]bool{}
		note := func(name string) {
			if !changed[name] {
				changed[name] = true
				out.Entities = append(out.Entities, name)
			}
		}
		var touched []int64
		for _, e := range entities {
			id, did, err := upsertEntity(ctx, tx, ns, e)
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
				id, did, err := upsertEntity(ctx, tx, ns, core.Entity{Name: name})
				if err != nil {
					return err
				}
				if did {
					note(name)
					touched = append(touched, id)
				}
				ids[i] = id
			}
			res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO mem_relations (from_id, to_id, type) VALUES (?, ?, ?)`, ids[0], ids[1], r.Type)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 {
				out.Relations++
			}
		}
		for _, id := range touched {
			if err := reindex(ctx, tx, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return core.MemoryCreated{}, err
	}
	return out, nil
}

// upsertEntity stores e, reporting its id and whether anything changed.
func upsertEntity(ctx context.Context, tx dbtx, ns string, e core.Entity) (id int64, changed bool, err error) {
	var typ string
	err = tx.QueryRowContext(ctx, `SELECT id, type FROM mem_entities WHERE ns = ? AND name = ?`, ns, e.Name).Scan(&id, &typ)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		res, err := tx.ExecContext(ctx, `INSERT INTO mem_entities (ns, name, type) VALUES (?, ?, ?)`, ns, e.Name, e.Type)
		if err != nil {
			return 0, false, err
		}
		if id, err = res.LastInsertId(); err != nil {
			return 0, false, err
		}
		changed = true
	case err != nil:
		return 0, false, err
	case e.Type != "" && e.Type != typ:
		if _, err := tx.ExecContext(ctx, `UPDATE mem_entities SET type = ? WHERE id = ?`, e.Type, id); err != nil {
			return 0, false, err
		}
		changed = true
	}
	for _, o := range e.Observations {
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO mem_observations (entity_id, ord, text)
			SELECT ?, coalesce(max(ord), 0) + 1, ? FROM mem_observations WHERE entity_id = ?`, id, o, id)
		if err != nil {
			return 0, false, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, false, err
		} else if n > 0 {
			changed = true
		}
	}
	return id, changed, nil
}

// reindex rewrites the full-text row of entity id.
func reindex(ctx context.Context, tx dbtx, id int64) error {
	e, err := loadEntity(ctx, tx, id)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM mem_fts WHERE docid = ?`, id); err != nil {
		return err
	}
	// FTS4 reads its text as C strings: a NUL would end it, hiding the
	// words after it. A NUL is no part of a word; a space stands for it.
	nul := strings.NewReplacer("\x00", " ")
	_, err = tx.ExecContext(ctx, `INSERT INTO mem_fts (docid, name, type, observations) VALUES (?, ?, ?, ?)`,
		id, nul.Replace(e.Name), nul.Replace(e.Type), nul.Replace(strings.Join(e.Observations, "\n")))
	return err
}

func loadEntity(ctx context.Context, q querier, id int64) (core.Entity, error) {
	var e core.Entity
	if err := q.QueryRowContext(ctx, `SELECT name, type FROM mem_entities WHERE id = ?`, id).Scan(&e.Name, &e.Type); err != nil {
		return e, err
	}
	rows, err := q.QueryContext(ctx, `SELECT text FROM mem_observations WHERE entity_id = ? ORDER BY ord`, id)
	if err != nil {
		return e, err
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return e, err
		}
		e.Observations = append(e.Observations, o)
	}
	return e, rows.Err()
}

// MemoryTraverse follows relations of type relation (any type when empty)
// outward from entity from, breadth first, up to depth hops (at least 1).
// Entities lists from first, then each entity in the order it was reached;
// Relations lists every relation followed. At each entity, relations are
// taken in order of type, then target name, so the result is deterministic.
// An unknown from is store.ErrNotFound.
func (s *SQLite) MemoryTraverse(ctx context.Context, ns, from, relation string, depth int) (core.MemoryTraversed, error) {
	if depth < 1 {
		depth = 1
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
	}
	defer rollback(tx)
	var start int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM mem_entities WHERE ns = ? AND name = ?`, ns, from).Scan(&start)
	if errors.Is(err, sql.ErrNoRows) {
		return core.MemoryTraversed{}, fmt.Errorf("memory %s: entity %q: %w", ns, from, store.ErrNotFound)
	}
	if err != nil {
		return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
	}
	type node struct {
		id   int64
		name string
	}
	order := []int64{start}
	seen := map[int64]bool{start: true}
	frontier := []node{{start, from}}
	var out core.MemoryTraversed
	for hop := 0; hop < depth && len(frontier) > 0; hop++ {
		var next []node
		for _, n := range frontier {
			rows, err := tx.QueryContext(ctx, `SELECT r.type, e.id, e.name FROM mem_relations r JOIN mem_entities e ON e.id = r.to_id
				WHERE r.from_id = ? AND (? = '' OR r.type = ?) ORDER BY r.type, e.name`, n.id, relation, relation)
			if err != nil {
				return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
			}
			for rows.Next() {
				var typ string
				var to node
				if err := rows.Scan(&typ, &to.id, &to.name); err != nil {
					rows.Close()
					return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
				}
				out.Relations = append(out.Relations, core.Relation{From: n.name, To: to.name, Type: typ})
				if !seen[to.id] {
					seen[to.id] = true
					order = append(order, to.id)
					next = append(next, to)
				}
			}
			err = rows.Err()
			rows.Close()
			if err != nil {
				return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
			}
		}
		frontier = next
	}
	for _, id := range order {
		e, err := loadEntity(ctx, tx, id)
		if err != nil {
			return core.MemoryTraversed{}, fmt.Errorf("memory %s: traverse: %w", ns, err)
		}
		out.Entities = append(out.Entities, e)
	}
	return out, nil
}
