package shardid

import (
	"maps"
	"sync"
	"time"
)

// MoveStats is where a move that this process runs is, for exporters.
type MoveStats struct {
	Logical  Range
	From, To string
	Phase    string
	Copied   map[string]int64 // rows copied so far, by table
	Backlog  int64            // changes logged on the source and not yet replayed
	Frozen   time.Duration    // how long writes of the range have been refused
}

// liveMove is a running move's stats, updated by its mover.
type liveMove struct {
	mu       sync.Mutex
	stats    MoveStats
	frozenAt time.Time // zero until the freeze
}

// MoveStats returns the moves this process is running.
func (p *Plugin) MoveStats() []MoveStats {
	var all []MoveStats
	p.liveMoves.Range(func(_, v any) bool {
		m := v.(*liveMove)
		m.mu.Lock()
		s := m.stats
		s.Copied = maps.Clone(s.Copied)
		if !m.frozenAt.IsZero() {
			s.Frozen = time.Since(m.frozenAt)
		}
		m.mu.Unlock()
		all = append(all, s)
		return true
	})
	return all
}

// track makes the move visible in MoveStats until the returned func runs.
func (mv *mover) track() func() {
	st := mv.st
	mv.live = &liveMove{stats: MoveStats{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Copied: maps.Clone(st.Copied)}}
	mv.p.liveMoves.Store(mv, mv.live)
	return func() { mv.p.liveMoves.Delete(mv) }
}

// note records a step of the move in its live stats.
func (m *liveMove) note(pr MoveProgress) {
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
