package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3" // the floor uses the same driver as the store
)

// floorProbe times the floor at the model calls: sample times txs bare
// transactions as one sample.
type floorProbe interface {
	sample(txs int) error
	median() float64
}

// probe times the SQLite floor: bare transactions (BEGIN IMMEDIATE, an insert of
// a fixed payload, COMMIT), prepared once and driven at the driver level on
// a pinned connection, the least a Go program can do through this driver,
// on a database of its own in the store's journal and sync mode. The bench
// times them in a loop of their own (tightFloor), and at every model call of
// a run, interleaved with its turns (model.probe).
type probe struct {
	db      *sql.DB
	conn    *sql.Conn
	stmts   [3]*sqlite3.SQLiteStmt
	args    []driver.NamedValue
	samples []float64
	// io, when set, reads what the process has written (the run's
	// counter); written is then what the probe's samples wrote, for the
	// run's figures to leave out.
	io      *ioCounter
	written int64
}

// openFloorDB opens a fresh database at path holding one table t, in the
// store's journal mode and the given sync mode.
func openFloorDB(path, mode string) (*sql.DB, error) {
	if mode == "CRITICAL" {
		mode = "NORMAL" // its common checkpoint is NORMAL
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous="+mode+"&_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func floorPayload(bytes int) []byte {
	payload := make([]byte, max(bytes, 1))
	for i := range payload {
		payload[i] = byte(i * 31)
	}
	return payload
}

// openProbe opens a probe inserting bytes per transaction into a fresh
// database at path.
func openProbe(path, mode string, bytes int) (*probe, error) {
	db, err := openFloorDB(path, mode)
	if err != nil {
		return nil, err
	}
	p := &probe{db: db, args: []driver.NamedValue{{Ordinal: 1, Value: floorPayload(bytes)}}}
	if p.conn, err = db.Conn(context.Background()); err != nil {
		p.close()
		return nil, err
	}
	err = p.conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("driver connection %T", dc)
		}
		for i, q := range []string{`BEGIN IMMEDIATE`, `INSERT INTO t (data) VALUES (?)`, `COMMIT`} {
			ds, err := c.Prepare(q)
			if err != nil {
				return err
			}
			st, ok := ds.(*sqlite3.SQLiteStmt)
			if !ok {
				ds.Close()
				return fmt.Errorf("driver statement %T", ds)
			}
			p.stmts[i] = st
		}
		return nil
	})
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// sample times txs transactions one after the other, as one sample.
func (p *probe) sample(txs int) error {
	if p.io != nil {
		before := p.io.written()
		defer func() { p.written += p.io.written() - before }()
	}
	return p.conn.Raw(func(any) error {
		ctx := context.Background()
		t0 := time.Now()
		for range txs {
			for i, args := range [][]driver.NamedValue{nil, p.args, nil} {
				if _, err := p.stmts[i].ExecContext(ctx, args); err != nil {
					return err
				}
			}
		}
		p.samples = append(p.samples, float64(time.Since(t0).Nanoseconds())/1e3)
		return nil
	})
}

func (p *probe) median() float64 { return percentile(p.samples, 0.5) }

func (p *probe) close() error {
	var errs []error
	for _, st := range p.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if p.conn != nil {
		errs = append(errs, p.conn.Close())
	}
	return errors.Join(append(errs, p.db.Close())...)
}
