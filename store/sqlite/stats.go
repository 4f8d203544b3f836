package sqlite

import "database/sql"

// PoolStats reports the store's connection pools: the read pool's (which
// keeps some idle connections, see Open) and the write pool's (one
// connection). For measurements and health checks.
func (s *SQLite) PoolStats() (read, write sql.DBStats) { return s.r.Stats(), s.w.Stats() }
