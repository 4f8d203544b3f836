package store

// The tail cache: what the last checkpoint of a run left (its key, status,
// seq and message log position), remembered once that checkpoint committed,
// so the next checkpoint need not read the last step back. It is safe
// against other writers because a checkpoint inserts exactly (run, seq+1),
// the step table's primary key: if anyone else appended to the run, the
// insert fails, the entry is dropped, and the retry reads the truth. The
// entry is used only for the step right after it; any other seq reads the
// last step back (and verifies its checksum), as a store that did not write
// the run itself always does.

// maxTails bounds the runs whose tails are remembered.
const maxTails = 256

type tail struct {
	rk       int64
	status   Status
	seq      int
	msgCount int
	msgSum   int64
}

func (s *SQLite) tail(runID string) (tail, bool) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	t, ok := s.tails[runID]
	return t, ok
}

// setTail remembers runID's tail after a committed checkpoint.
func (s *SQLite) setTail(runID string, t tail) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	if s.tails == nil {
		s.tails = map[string]tail{}
	}
	if _, ok := s.tails[runID]; !ok && len(s.tails) >= maxTails {
		for k := range s.tails { // evict any one
			delete(s.tails, k)
			break
		}
	}
	s.tails[runID] = t
}

// forgetTail drops runID's tail: after a failed checkpoint, or a status
// change made outside a checkpoint.
func (s *SQLite) forgetTail(runID string) {
	s.segMu.Lock()
	defer s.segMu.Unlock()
	delete(s.tails, runID)
}
