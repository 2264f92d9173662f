package integration

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shardid/shardid"
)

// The history checker's record: every operation of every client, with its
// invocation and return times, its arguments, its result and its error, and
// the porcupine model the operations of one row are checked against.

// HistRow is the row the history tests write: a counter N its owner
// increments, a register V it sets, and Tag, which names the row before the
// plugin gives it an ID (a create that failed ambiguously has none to note),
// so that a row created twice shows as two rows with one tag.
type HistRow struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Tag   string `gorm:"size:32;index"`
	Owner int
	N     int64
	V     string `gorm:"size:32"`
}

// HistRowV2 is HistRow with the column a migration adds during a move's copy.
type HistRowV2 struct {
	ID    int64  `shardid:"strategy:snowflake"`
	Tag   string `gorm:"size:32;index"`
	Owner int
	N     int64
	V     string  `gorm:"size:32"`
	Extra *string `gorm:"size:32"`
}

func (HistRowV2) TableName() string { return "hist_rows" }

// hKind is what an operation does.
type hKind int

const (
	hCreate hKind = iota // Create one row, with its tag
	hInc                 // n = n + 1 of one row by its ID (UpdateColumn, or Exec under ByID)
	hSet                 // v = value of one row by its ID (UpdateColumn, or Table(...).Update under ByID)
	hRead                // First by ID
	hScan                // AllShards Find of every row: projected on each tag
	hCount               // AllShards Count
	hFanInc              // AllShards UpdateColumn("n", n + 1) WHERE tag IN (the client's rows)
)

func (k hKind) String() string {
	return [...]string{"create", "inc", "set", "read", "scan", "count", "fan-inc"}[k]
}

// hOutcome is what the client knows of an operation's effect.
type hOutcome int

const (
	hOK        hOutcome = iota // acknowledged
	hFailed                    // definitely not applied: ErrShardMoved of a one-row write, or a read's error
	hAmbiguous                 // applied or not: a connection's error, a timeout, a part of a fan-out refused
)

// hSeen is one row as a read returned it.
type hSeen struct {
	Copies int // rows with the tag the read returned
	N      int64
	V      string
}

// hOp is one operation of one client.
type hOp struct {
	Client, Process int
	Kind            hKind
	Tag             string   // create, inc, set, read
	Tags            []string // fan-inc
	ID              int64    // the row's, when known
	Value           string   // set
	Call, Return    int64    // nanoseconds since the recorder began
	MapVersion      int64    // the process's map version at the call
	Outcome         hOutcome
	Err             error
	Affected        int64            // writes: RowsAffected
	Seen            hSeen            // read
	Scan            map[string]hSeen // scan: by tag
	Count           int64            // count
	Note            string           // what the client found out about it afterwards
}

// recorder collects the operations of every client.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []*hOp
	// rows created with an acknowledgement, which clients read and write
	acked []hRowRef
}

type hRowRef struct {
	Tag     string
	ID      int64
	Process int // the process that created it
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

// now is monotonic: time.Since reads the monotonic clock.
func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(op *hOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	if op.Kind == hCreate && op.Outcome == hOK {
		r.acked = append(r.acked, hRowRef{Tag: op.Tag, ID: op.ID, Process: op.Process})
	}
}

// pick returns a row acknowledged as created, or false.
func (r *recorder) pick(n int) (hRowRef, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.acked) == 0 {
		return hRowRef{}, false
	}
	return r.acked[n%len(r.acked)], true
}

func (r *recorder) snapshot() []*hOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// pending is the return time of an operation whose outcome is unknown: it
// may take effect at any time after its call, or never (linearized after
// every other operation, where nothing observes it).
const pending = math.MaxInt64 / 2

// The porcupine model of one row, partitioned by tag.

type hInput struct {
	Kind  hKind
	Tag   string
	Value string
}

type hOutput struct {
	Unknown  bool // an ambiguous write: any effect it may have had
	Affected int64
	Seen     hSeen
}

type hState struct {
	Copies int
	N      int64
	V      string
}

// rowModel is a counter and a register of one row (the checker gives it
// the operations of one tag at a time), which reads and the projections of
// scans see whole, and which exists once after its create. A write whose
// outcome is unknown may or may not have taken effect.
var rowModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{hState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(hState), input.(hInput), output.(hOutput)
		next := s
		switch in.Kind {
		case hCreate:
			if s.Copies != 0 {
				return nil // one create per tag
			}
			next = hState{Copies: 1}
		case hInc, hFanInc:
			if !out.Unknown && in.Kind == hInc && out.Affected != int64(s.Copies) {
				return nil
			}
			if s.Copies > 0 {
				next.N++
			}
		case hSet:
			if !out.Unknown && out.Affected != int64(s.Copies) {
				return nil
			}
			if s.Copies > 0 {
				next.V = in.Value
			}
		case hRead, hScan:
			if out.Seen.Copies != s.Copies || s.Copies == 1 && (out.Seen.N != s.N || out.Seen.V != s.V) {
				return nil
			}
			return []any{s}
		default:
			return nil
		}
		if out.Unknown && next != s {
			return []any{s, next}
		}
		return []any{next}
	},
	Hash: func(state any) uint64 {
		s := state.(hState)
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%d/%s", s.Copies, s.N, s.V)
		return h.Sum64()
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(hInput), output.(hOutput)
		switch {
		case out.Unknown:
			return fmt.Sprintf("%s %s %s -> ?", in.Kind, in.Tag, in.Value)
		case in.Kind == hRead || in.Kind == hScan:
			return fmt.Sprintf("%s %s -> copies %d n %d v %q", in.Kind, in.Tag, out.Seen.Copies, out.Seen.N, out.Seen.V)
		}
		return fmt.Sprintf("%s %s %s -> %d rows", in.Kind, in.Tag, in.Value, out.Affected)
	},
	DescribeState: func(state any) string {
		s := state.(hState)
		return fmt.Sprintf("copies %d n %d v %q", s.Copies, s.N, s.V)
	},
}).ToModel()

// moveMark is when a move's map version began to be served: a process whose
// map is older may read the source's frozen copy, whose state is the state
// at the move's check (its "verified" step, inside the freeze).
type moveMark struct {
	Version  int64
	Verified int64
	Cleanup  int64 // when its CleanupMove began
}

// staleFloor is how far back a read of a process at map version v may see:
// the check of the first move it has not seen, or its own call.
func staleFloor(call, v int64, marks []moveMark) int64 {
	for _, m := range marks {
		if m.Version > v && m.Verified < call {
			return m.Verified
		}
	}
	return call
}

// hVerdict is what the checker found in a history.
type hVerdict struct {
	Ops, Writes, Reads, Scans, Ambiguous, Failed int
	Partitions                                   int
	Violations                                   []string
	Known                                        []string // violations by reads in flight across a cleanup
	Result                                       porcupine.CheckResult
}

// checkHistory builds porcupine's history from the record and checks it;
// the counts of scans, which no model of one row sees, are checked against
// the creates acknowledged before them and those begun before they ended.
// finals are the rows as the physical databases hold them at the end, read
// after every operation.
func checkHistory(ops []*hOp, marks []moveMark, finals map[string]hSeen, end int64, timeout time.Duration) hVerdict {
	var v hVerdict
	sort.Slice(marks, func(i, j int) bool { return marks[i].Version < marks[j].Version })
	created := map[string]bool{}
	for _, op := range ops {
		if op.Kind == hCreate {
			created[op.Tag] = true
		}
	}
	var history []porcupine.Operation
	add := func(op *hOp, in hInput, out hOutput, call, ret int64) {
		meta := fmt.Sprintf("process %d, map version %d", op.Process, op.MapVersion)
		if call != op.Call {
			meta += ", may see as far back as " + at(call)
		}
		if op.Note != "" {
			meta += "; " + op.Note
		}
		history = append(history, porcupine.Operation{ClientId: op.Client, Input: in, Output: out, Call: call, Return: ret,
			Metadata: hMeta{Version: op.MapVersion, Text: meta}})
	}
	for _, op := range ops {
		v.Ops++
		switch op.Outcome {
		case hFailed:
			v.Failed++
			continue
		case hAmbiguous:
			v.Ambiguous++
		}
		ret := op.Return
		if op.Outcome == hAmbiguous && !errors.Is(op.Err, shardid.ErrShardMoved) {
			ret = pending // the server may apply it after the client gave up
		}
		switch op.Kind {
		case hCreate, hInc, hSet:
			v.Writes++
			add(op, hInput{Kind: op.Kind, Tag: op.Tag, Value: op.Value}, hOutput{Unknown: op.Outcome == hAmbiguous, Affected: op.Affected}, op.Call, ret)
		case hFanInc:
			v.Writes++
			for _, tag := range op.Tags {
				add(op, hInput{Kind: hFanInc, Tag: tag}, hOutput{Unknown: op.Outcome == hAmbiguous}, op.Call, ret)
			}
			if op.Outcome == hOK && op.Affected != int64(len(op.Tags)) {
				v.Violations = append(v.Violations, fmt.Sprintf("client %d's fan-out increment of its %d rows at %s affected %d rows", op.Client, len(op.Tags), at(op.Call), op.Affected))
			}
		case hRead:
			v.Reads++
			add(op, hInput{Kind: hRead, Tag: op.Tag}, hOutput{Seen: op.Seen}, staleFloor(op.Call, op.MapVersion, marks), op.Return)
		case hScan:
			v.Scans++
			call := staleFloor(op.Call, op.MapVersion, marks)
			for tag, seen := range op.Scan {
				if !created[tag] {
					v.Violations = append(v.Violations, fmt.Sprintf("client %d's scan at %s returned %d rows of tag %q, which no client created", op.Client, at(op.Call), seen.Copies, tag))
				}
			}
			for tag := range created {
				add(op, hInput{Kind: hScan, Tag: tag}, hOutput{Seen: op.Scan[tag]}, call, op.Return)
			}
		case hCount:
			v.Scans++
			call := staleFloor(op.Call, op.MapVersion, marks)
			var low, high int64
			for _, c := range ops {
				if c.Kind != hCreate || c.Outcome == hFailed {
					continue
				}
				if c.Outcome == hOK && c.Return < call {
					low++
				}
				if c.Call < op.Return {
					high++
				}
			}
			if op.Count < low || op.Count > high {
				v.Violations = append(v.Violations, fmt.Sprintf("client %d's count at %s-%s returned %d rows: %d were created before it began, %d begun before it ended",
					op.Client, at(op.Call), at(op.Return), op.Count, low, high))
			}
		}
	}
	// The physical databases at the end: one read of every row, after all.
	final := &hOp{Client: -1}
	for tag := range created {
		add(final, hInput{Kind: hRead, Tag: tag}, hOutput{Seen: finals[tag]}, end, end)
	}
	for tag, seen := range finals {
		if !created[tag] {
			v.Violations = append(v.Violations, fmt.Sprintf("the databases hold %d rows of tag %q, which no client created", seen.Copies, tag))
		}
	}
	v.Partitions = len(created)
	v.Result = porcupine.Ok
	byTag := map[string][]porcupine.Operation{}
	for _, op := range history {
		tag := op.Input.(hInput).Tag
		byTag[tag] = append(byTag[tag], op)
	}
	deadline := time.Now().Add(timeout)
	for _, tag := range slices.Sorted(maps.Keys(byTag)) {
		ops := byTag[tag]
		switch porcupine.CheckOperationsTimeout(rowModel, ops, max(time.Until(deadline), time.Second)) {
		case porcupine.Illegal:
			v.Result = porcupine.Illegal
			text, first := describeIllegal(tag, ops, marks)
			if m, ok := inFlightAcrossCleanup(first, marks); ok {
				v.Known = append(v.Known, fmt.Sprintf("%s\n    (the first operation left out is a read the process routed by map version %d, which was under way when the cleanup of the move to version %d began at %s)",
					text, first.Metadata.(hMeta).Version, m.Version, at(m.Cleanup)))
				continue
			}
			v.Violations = append(v.Violations, text)
		case porcupine.Unknown:
			if v.Result == porcupine.Ok {
				v.Result = porcupine.Unknown
			}
			v.Violations = append(v.Violations, fmt.Sprintf("row %s: the checker timed out: linearizability unknown", tag))
		}
	}
	return v
}

// describeIllegal writes a row that cannot be linearized: its longest
// linearizable prefix, and every operation of the row by its call, scans
// that saw what the one before saw folded; with SHARDID_HISTORY_HTML set,
// porcupine's visualization of it is written to that folder.
func describeIllegal(tag string, ops []porcupine.Operation, marks []moveMark) (string, porcupine.Operation) {
	_, info := porcupine.CheckOperationsVerbose(rowModel, ops, 30*time.Second)
	var longest []int
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	in := map[int]bool{}
	for _, id := range longest {
		in[id] = true
	}
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return ops[order[i]].Call < ops[order[j]].Call })
	// The first operation by its call that no linearization reaches, and the
	// operations about it.
	stuck := int64(pending)
	var first porcupine.Operation
	for _, i := range order {
		if !in[i] {
			stuck, first = ops[i].Call, ops[i]
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "row %s is not linearizable: of its %d operations, at most %d linearize; the first left out was called at %s; the operations from a second before it (* left out):",
		tag, len(ops), len(longest), at(stuck))
	last, folded := "", 0
	for _, i := range order {
		op := ops[i]
		if op.Call < stuck-int64(time.Second) && op.Return < stuck-int64(time.Second) {
			continue
		}
		if op.Call > stuck+int64(time.Second) {
			break
		}
		line := rowModel.DescribeOperation(op.Input, op.Output)
		mark := " "
		if !in[i] {
			mark = "*"
		}
		if op.Input.(hInput).Kind == hScan && line == last && mark == " " {
			folded++
			continue
		}
		if folded > 0 {
			fmt.Fprintf(&b, "\n      (%d more scans alike)", folded)
			folded = 0
		}
		last = line
		fmt.Fprintf(&b, "\n    %s [%s, %s] client %d: %s (%s)", mark, at(op.Call), at(op.Return), op.ClientId, line, op.Metadata.(hMeta).Text)
	}
	if folded > 0 {
		fmt.Fprintf(&b, "\n      (%d more scans alike)", folded)
	}
	fmt.Fprintf(&b, "\n    the moves: %s", describeMarks(marks))
	if dir := os.Getenv("SHARDID_HISTORY_HTML"); dir != "" {
		path := filepath.Join(dir, "history-"+tag+".html")
		if err := porcupine.VisualizePath(rowModel, info, path); err == nil {
			fmt.Fprintf(&b, "\n    visualized in %s", path)
		}
	}
	return b.String(), first
}

// hMeta is what the report of a violation says of an operation.
type hMeta struct {
	Version int64 // the process's map version at the call
	Text    string
}

// inFlightAcrossCleanup reports whether op is a read that its process
// routed by a map older than a move's, and that was still under way when
// that move's cleanup began: the bug TestCleanupWaitsForStatementsRoutedByTheOldMap
// shows, which the history test reports apart.
func inFlightAcrossCleanup(op porcupine.Operation, marks []moveMark) (moveMark, bool) {
	in, ok := op.Input.(hInput)
	if !ok || in.Kind != hRead && in.Kind != hScan {
		return moveMark{}, false
	}
	v := op.Metadata.(hMeta).Version
	for _, m := range marks {
		if m.Version > v && m.Cleanup > 0 && op.Return > m.Cleanup {
			return m, true
		}
	}
	return moveMark{}, false
}

// at writes a recorder time as seconds.
func at(ns int64) string {
	if ns >= pending {
		return "∞"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

// describeMarks writes when each move's map began to be served.
func describeMarks(marks []moveMark) string {
	parts := make([]string, len(marks))
	for i, m := range marks {
		parts[i] = fmt.Sprintf("version %d checked at %s", m.Version, at(m.Verified))
	}
	return strings.Join(parts, ", ")
}
