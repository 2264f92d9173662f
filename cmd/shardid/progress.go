package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/shardid/shardid"
)

// moveProgress shows a move's progress: on a terminal a bar per table, else
// a plain line for each new phase or table and at most one a second within
// it (logs stay short), and its last before the next or the end. It is not safe for concurrent use; a move reports
// from one goroutine.
type moveProgress struct {
	w        io.Writer
	terminal bool
	bar      *progressbar.ProgressBar
	current  string // the phase and table of the last report
	lastLine time.Time
	skipped  string // the last line not printed, printed before the next phase or table
}

func newMoveProgress(w io.Writer) *moveProgress {
	return &moveProgress{w: w, terminal: isTerminal(w)}
}

// isTerminal reports whether w is a terminal, where a progress bar's frames
// redraw one line; elsewhere (a log, a pipe) each frame would stay.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *moveProgress) update(m shardid.MoveProgress) {
	key := m.Phase + " " + m.Table
	changed := key != p.current
	p.current = key
	if !p.terminal {
		line := "move: " + describeProgress(m)
		if !changed && time.Since(p.lastLine) < time.Second {
			p.skipped = line
			return
		}
		if changed {
			p.flushSkipped() // where the phase or table ended, not where it was last printed
		}
		p.skipped, p.lastLine = "", time.Now()
		fmt.Fprintln(p.w, line)
		return
	}
	if changed || p.bar == nil {
		p.finish()
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
	p.bar.Describe(describeProgress(m))
	_ = p.bar.Add(1)
}

// describeProgress writes a report of the move in one line.
func describeProgress(m shardid.MoveProgress) string {
	if m.Phase == shardid.PhaseCopy {
		return fmt.Sprintf("copy %s: %d of %s", m.Table, m.Copied, plural(m.Total, "row"))
	}
	parts := []string{m.Phase}
	if m.Step != "" {
		parts = append(parts, m.Step)
	}
	if m.Table != "" {
		parts = append(parts, m.Table)
	}
	if m.Phase == shardid.PhaseCatchUp || m.Phase == shardid.PhaseCutover {
		return fmt.Sprintf("%s: %s behind", strings.Join(parts, " "), plural(m.Backlog, "change"))
	}
	return strings.Join(parts, " ")
}

// flushSkipped prints the last line not printed, if any.
func (p *moveProgress) flushSkipped() {
	if p.skipped != "" {
		fmt.Fprintln(p.w, p.skipped)
		p.skipped = ""
	}
}

// finish ends the current bar, leaving it on its own line, or prints the
// last line not printed.
func (p *moveProgress) finish() {
	p.flushSkipped()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
		p.bar = nil
	}
}
