package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/shardid/shardid"
)

// moveProgress shows a move's progress: on a terminal a bar per table, else
// a plain line at most every second (logs stay short). It is not safe for
// concurrent use; a move reports from one goroutine.
type moveProgress struct {
	w        io.Writer
	terminal bool
	bar      *progressbar.ProgressBar
	barOf    string // the table, or phase, of bar
	lastLine time.Time
}

func newMoveProgress(w io.Writer) *moveProgress {
	f, ok := w.(*os.File)
	return &moveProgress{w: w, terminal: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *moveProgress) update(m shardid.MoveProgress) {
	if !p.terminal {
		if time.Since(p.lastLine) < time.Second {
			return
		}
		p.lastLine = time.Now()
		if m.Phase == shardid.PhaseCopy {
			fmt.Fprintf(p.w, "move: copy %s: %d of %d rows\n", m.Table, m.Copied, m.Total)
		} else {
			fmt.Fprintf(p.w, "move: %s: %d changes behind\n", m.Phase, m.Backlog)
		}
		return
	}
	key := m.Phase + " " + m.Table
	if p.bar == nil || p.barOf != key {
		p.finish()
		p.barOf = key
		if m.Phase == shardid.PhaseCopy {
			p.bar = progressbar.NewOptions64(max(m.Total, m.Copied, 1), progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("copy "+m.Table),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetPredictTime(true))
		} else {
			p.bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(p.w), progressbar.OptionThrottle(100*time.Millisecond))
		}
	}
	if m.Phase == shardid.PhaseCopy {
		if m.Copied > p.bar.GetMax64() {
			p.bar.ChangeMax64(m.Copied) // rows written since the count
		}
		_ = p.bar.Set64(m.Copied)
		return
	}
	p.bar.Describe(fmt.Sprintf("%s: %d changes behind", m.Phase, m.Backlog))
	_ = p.bar.Add(1)
}

// finish ends the current bar, leaving it on its own line.
func (p *moveProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}
