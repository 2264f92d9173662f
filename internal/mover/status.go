package mover

import (
	"context"
	"time"
)

// Status is a move as the store records it. It is plain data, safe for
// concurrent reads.
type Status struct {
	Logical    Range
	From, To   string
	Phase      string
	Rows       map[string]int64
	Changes    int64
	Frozen     time.Duration
	MapVersion int64
	Started    time.Time
	CutoverAt  time.Time
	Running    bool
	Cancelling bool
}

// Moves lists the moves the store records, ended ones too.
func (m *Mover) Moves(ctx context.Context, d Driver) ([]Status, error) {
	s := d.Store()
	list, err := s.Moves(ctx) // none without the moves table: a listing makes none
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(list))
	for i, st := range list {
		out[i] = Status{Logical: st.Logical, From: st.From, To: st.To, Phase: st.Phase, Rows: st.Copied, Changes: st.Changes,
			Frozen: st.Frozen, MapVersion: st.MapVersion, Started: st.Started, CutoverAt: st.CutoverAt, Cancelling: st.Cancelling}
		if st.Phase != PhaseCancelled && st.Phase != PhaseCleaned {
			if out[i].Running, err = s.MoveRunning(ctx, st.Logical); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
