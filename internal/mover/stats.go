package mover

import (
	"maps"
	"sync"
	"time"
)

// Stats is where a move that this process runs is, for exporters. It is
// plain data, safe for concurrent reads.
type Stats struct {
	Logical  Range
	From, To string
	Phase    string
	Copied   map[string]int64 // rows copied so far, by table
	Backlog  int64            // changes logged on the source and not yet replayed
	Frozen   time.Duration    // how long writes of the range have been refused
}

// liveMove is a running move's stats, updated by its run. It is safe for
// concurrent use.
type liveMove struct {
	mu       sync.Mutex // protects the fields below
	stats    Stats
	frozenAt time.Time // zero until the freeze
}

// Stats returns the moves this process is running.
func (m *Mover) Stats() []Stats {
	var all []Stats
	m.live.Range(func(_, v any) bool {
		lm := v.(*liveMove)
		lm.mu.Lock()
		s := lm.stats
		s.Copied = maps.Clone(s.Copied)
		if !lm.frozenAt.IsZero() {
			s.Frozen = time.Since(lm.frozenAt)
		}
		lm.mu.Unlock()
		all = append(all, s)
		return true
	})
	return all
}

// track makes the run visible in Stats until the returned func runs.
func (m *Mover) track(mv *run) func() {
	st := mv.st
	mv.live = &liveMove{stats: Stats{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Copied: maps.Clone(st.Copied)}}
	m.live.Store(mv, mv.live)
	return func() { m.live.Delete(mv) }
}

// note records a step of the move in its live stats.
func (m *liveMove) note(pr Progress) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Phase = pr.Phase
	switch pr.Step {
	case "chunk":
		if m.stats.Copied == nil {
			m.stats.Copied = map[string]int64{}
		}
		m.stats.Copied[pr.Table] = pr.Copied
	case "round":
		m.stats.Backlog = pr.Backlog
	case "frozen":
		m.frozenAt, m.stats.Backlog = time.Now(), 0
	case "map written":
		m.stats.Frozen, m.frozenAt = time.Since(m.frozenAt), time.Time{}
	}
}
