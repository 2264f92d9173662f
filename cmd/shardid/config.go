package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/internal/dsn"
	"github.com/shardid/shardid/internal/engine"
	"github.com/shardid/shardid/internal/sqlscan"
)

// configHelp is what the operators' commands say about --config.
const configHelp = `The config file (JSON) names the plugin's own database and the physical
databases, with the same layout the application uses:

  {
    "main": "root@tcp(127.0.0.1:3306)/app",
    "shards": [
      {"name": "a", "dsn": "root@tcp(127.0.0.1:3306)/shard_a", "logical": "0-4095"},
      {"name": "b", "dsn": "root@tcp(127.0.0.1:3306)/shard_b", "logical": "4096-8191"},
      {"name": "c", "dsn": "root@tcp(127.0.0.1:3306)/shard_c"}
    ],
    "layout": {"shard_bits": 13},
    "map_refresh": "1s"
  }

A DSN is a MySQL/MariaDB DSN (user@tcp(host:port)/db), a PostgreSQL URL
(postgres://...) or an SQLite file (file:path.db). A shard without "logical"
holds no logical shards: a move's target. "layout" takes time_bits,
shard_bits, sequence_bits, worker_bits (-1 for none), epoch (RFC 3339) and
unit (a duration); omitted fields are filled as in a Config.Layout: the
defaults, but the last of the three widths left out takes what the others
leave of 63 ({"shard_bits": 12} is 40/12/11). The file's ranges only seed the
shared map: once the plugin's database holds the map (the table
shardid_shard_map, or "map_table" as the application's Config.MapTable),
the table wins, and a file that disagrees is reported.`

// fileConfig is the config file of the operators' commands.
type fileConfig struct {
	Main       string      `json:"main"`
	Shards     []fileShard `json:"shards"`
	Layout     *fileLayout `json:"layout"`
	MapRefresh string      `json:"map_refresh"`
	MapTable   string      `json:"map_table"`
	path       string      // the file it was read from, for errors
	// connectTimeout, when set, bounds the plugin's dials: a command that
	// gave up on a database does not wait for the plugin's own bound to close.
	connectTimeout time.Duration
	// existing makes the commands open main's SQLite file only if it
	// exists: a mistyped path is refused, not made empty.
	existing bool
	// checkOnly makes the plugin check the database each shard name opens
	// and record none (engine.CheckIdentitiesOnly).
	checkOnly bool
}

type fileShard struct {
	Name    string `json:"name"`
	DSN     string `json:"dsn"`
	Logical string `json:"logical"`
}

// fileLayout holds the same fields as the layout flags.
type fileLayout struct {
	TimeBits     int    `json:"time_bits"`
	ShardBits    int    `json:"shard_bits"`
	SequenceBits int    `json:"sequence_bits"`
	WorkerBits   int    `json:"worker_bits"`
	Epoch        string `json:"epoch"`
	Unit         string `json:"unit"`
}

// readConfig reads and checks the config file at path; every error names the
// file, and the field where there is one.
func readConfig(path string) (*fileConfig, error) {
	if path == "" {
		return nil, errors.New("--config: give the config file (JSON) naming the plugin's database and the physical databases; see --help")
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	c := &fileConfig{path: path}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; give a JSON object naming the plugin's database and the physical databases (see --help)", path)
	}
	if trimmed := bytes.TrimSpace(body); trimmed[0] != '{' && json.Valid(trimmed) {
		return nil, fmt.Errorf("%s: want a JSON object {\"main\": ..., \"shards\": [...]}, not %s (see --help)", path, jsonKind(trimmed[0]))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line := 1 + bytes.Count(body[:syntax.Offset], []byte("\n"))
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", path)
	}
	if first, again := repeatedKey(body); first == again && first != "" {
		return nil, fmt.Errorf("%s: %q is given twice in one object; give it once", path, first)
	} else if first != "" {
		return nil, fmt.Errorf("%s: %q and %q are one key, given twice in one object (keys are read whatever their case); give it once", path, first, again)
	}
	return c, c.check()
}

// jsonKind names the JSON value that begins with b.
func jsonKind(b byte) string {
	switch b {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// repeatedKey returns the two keys, first and again, that an object of the
// JSON document body holds twice, of which encoding/json keeps the last
// without a word, or "". Keys are compared as encoding/json matches them to
// fields, whatever their case: "main" and "Main" are one key.
func repeatedKey(body []byte) (first, again string) {
	type level struct {
		keys    []string // nil in an array
		object  bool
		wantKey bool
	}
	var stack []*level
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "" // the end, or a syntax error the decoder has reported
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			if top := len(stack) - 1; top >= 0 && stack[top].object && stack[top].wantKey {
				key, _ := tok.(string)
				for _, seen := range stack[top].keys {
					if strings.EqualFold(seen, key) {
						return seen, key
					}
				}
				stack[top].keys, stack[top].wantKey = append(stack[top].keys, key), false
				continue
			}
			valueDone()
		}
	}
}

// fieldError names the file and the field of a bad value.
func (c *fileConfig) fieldError(field string, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", c.path, field, fmt.Sprintf(format, args...))
}

func (c *fileConfig) check() error {
	if c.Main == "" {
		return c.fieldError("main", "missing: give the plugin's own database, which holds the shared map")
	}
	if _, err := dialectorFor(c.Main); err != nil {
		return c.fieldError("main", "%v", err)
	}
	if len(c.Shards) == 0 {
		return c.fieldError("shards", "missing: list the physical databases")
	}
	seen := map[string]bool{}
	for i, s := range c.Shards {
		field := fmt.Sprintf("shards[%d]", i)
		switch {
		case s.Name == "":
			return c.fieldError(field+".name", "missing")
		case seen[s.Name]:
			return c.fieldError(field+".name", "%q is listed twice", s.Name)
		case s.DSN == "":
			return c.fieldError(field+".dsn", "missing")
		case s.DSN == c.Main:
			return c.fieldError(field+".dsn", "the same database as main; the plugin's database cannot also be a shard")
		}
		seen[s.Name] = true
		if _, err := dialectorFor(s.DSN); err != nil {
			return c.fieldError(field+".dsn", "%v", err)
		}
		if _, err := parseRanges(s.Logical); err != nil {
			return c.fieldError(field+".logical", "%v", err)
		}
	}
	if _, err := c.layout(); err != nil {
		return err
	}
	if problem := engine.MapTableProblem(c.MapTable); problem != "" {
		return c.fieldError("map_table", "%q is no name an application's Config.MapTable takes (%s)", c.MapTable, problem)
	}
	_, err := c.mapRefresh()
	return err
}

func (c *fileConfig) layout() (shardid.Layout, error) {
	if c.Layout == nil {
		return shardid.Layout{}, nil
	}
	f := c.Layout
	l := shardid.Layout{TimeBits: f.TimeBits, ShardBits: f.ShardBits, SequenceBits: f.SequenceBits, WorkerBits: f.WorkerBits}
	if f.Epoch != "" {
		epoch, err := parseEpoch(f.Epoch)
		if err != nil {
			return l, c.fieldError("layout.epoch", "%v", err)
		}
		l.Epoch = epoch
	}
	if f.Unit != "" {
		unit, err := time.ParseDuration(f.Unit)
		if err != nil {
			return l, c.fieldError("layout.unit", "%v", err)
		}
		l.TimeUnit = unit
	}
	if err := l.Validate(time.Now()); err != nil {
		return l, c.fieldError("layout", "%v", err)
	}
	return l, nil
}

// mapTable is the shared map's table the file names, or the default.
func (c *fileConfig) mapTable() string {
	if c.MapTable != "" {
		return c.MapTable
	}
	return "shardid_shard_map"
}

func (c *fileConfig) mapRefresh() (time.Duration, error) {
	if c.MapRefresh == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(c.MapRefresh)
	if err != nil {
		return 0, c.fieldError("map_refresh", "%v", err)
	}
	return d, nil
}

// parseRanges reads FROM-TO[,FROM-TO...] (a single N is N-N); "" is none.
func parseRanges(text string) ([]shardid.Range, error) {
	var ranges []shardid.Range
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		r, err := parseRange(part)
		if err != nil {
			return nil, err
		}
		ranges = append(ranges, r)
	}
	return ranges, nil
}

// parseRange reads FROM-TO, or N for N-N.
func parseRange(text string) (shardid.Range, error) {
	from, to, found := strings.Cut(strings.TrimSpace(text), "-")
	if !found {
		to = from
	}
	a, errA := strconv.Atoi(strings.TrimSpace(from))
	b, errB := strconv.Atoi(strings.TrimSpace(to))
	switch {
	case errA != nil || errB != nil:
		return shardid.Range{}, fmt.Errorf("%q is not FROM-TO (logical shard numbers, such as 0-4095)", text)
	case a < 0 || a > b:
		return shardid.Range{}, fmt.Errorf("%q: want 0 <= FROM <= TO", text)
	}
	return shardid.Range{From: a, To: b}, nil
}

// opsSetup is the plugin the operators' commands drive, on the databases of
// a config file.
type opsSetup struct {
	db     *gorm.DB
	plugin *shardid.Plugin
	config *fileConfig
}

// openConfig opens the plugin's database with the plugin registered; warnings
// of the plugin (such as a file that disagrees with the shared map) go to
// warnings.
func openConfig(c *fileConfig, warnings io.Writer) (*opsSetup, error) {
	return openConfigOf(c, warnings, false)
}

// openConfigOf is openConfig; with sharedMap it refuses a config whose map
// table the plugin's database does not hold: a move by a map no application
// follows (map_table other than the application's) would seal its range
// for good, and its cleanup delete rows the application still reads.
func openConfigOf(c *fileConfig, warnings io.Writer, sharedMap bool) (*opsSetup, error) {
	layout, err := c.layout()
	if err != nil {
		return nil, err
	}
	refresh, err := c.mapRefresh()
	if err != nil {
		return nil, err
	}
	if path, ok := sqliteFile(c.Main); ok && c.existing {
		if info, err := os.Stat(path); err != nil {
			return nil, c.fieldError("main", "%v: the commands open the application's databases and never make one", err)
		} else if info.IsDir() {
			return nil, c.fieldError("main", "%s is a directory: give the application's SQLite file", path)
		}
	}
	main, err := dialectorFor(c.opened(c.Main))
	if err != nil {
		return nil, c.fieldError("main", "%v", err)
	}
	cfg := shardid.Config{Layout: layout, MapRefresh: refresh, MapTable: c.MapTable, ConnectTimeout: c.connectTimeout, Log: slog.New(warnHandler{warnings})}
	for _, s := range c.Shards {
		if path, ok := sqliteFile(s.DSN); ok && c.existing {
			if _, err := os.Stat(path); err != nil {
				fmt.Fprintf(warnings, "shardid: shard %s: %v: the commands open the application's databases and never make one (the application makes a shard's file when it first uses it; for a new shard, create an empty file there); it is reported down\n", s.Name, err)
			}
		}
		d, err := dialectorFor(c.opened(s.DSN))
		if err != nil {
			return nil, err
		}
		ranges, err := parseRanges(s.Logical)
		if err != nil {
			return nil, err
		}
		cfg.Shards = append(cfg.Shards, shardid.Shard{Name: s.Name, Dialector: d, Logical: ranges})
	}
	db, err := openMain(main, c.dialBound())
	if err != nil {
		return nil, fmt.Errorf("%s: main: %w", c.path, dsn.RedactError(err, c.Main)) // a driver refusing a DSN prints it
	}
	table := c.mapTable()
	held := sqlscan.Folded(db.Dialector.Name(), table) // the plugin names it as if unquoted
	if sharedMap {
		// HasTable says false for a database it cannot read (an SQLite
		// file that is no database): that is not a map table missing.
		if _, err := db.Migrator().GetTables(); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: main: reading its tables: %w", c.path, dsn.RedactError(err, c.Main)), closeDB(db))
		}
	}
	if sharedMap && !db.Migrator().HasTable(held) {
		return nil, errors.Join(c.fieldError("map_table", "%s is not on main: no application shares its map there (give the application's Config.MapTable; an application creates it when it starts)", table), closeDB(db))
	} else if sharedMap {
		// An empty table would be seeded from this file, which is only the operator's copy.
		var versions int64
		if err := db.Table(held).Count(&versions).Error; err != nil {
			return nil, errors.Join(fmt.Errorf("%s: reading %s on main: %w", c.path, table, err), closeDB(db))
		}
		if versions == 0 {
			return nil, errors.Join(c.fieldError("map_table", "%s on main holds no map: no command writes one from its file (an application seeds it when it starts)", table), closeDB(db))
		}
	}
	plugin := shardid.New(cfg)
	if c.checkOnly {
		engine.Of(plugin).CheckIdentitiesOnly()
	}
	if err := db.Use(plugin); err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", c.path, err), closeDB(db))
	}
	return &opsSetup{db: db, plugin: plugin, config: c}, nil
}

// sqliteFile is the file an SQLite DSN names, and whether it names one (not
// a database in memory).
func sqliteFile(d string) (string, bool) {
	rest, found := strings.CutPrefix(d, "file:")
	if !found {
		return "", false
	}
	path, query, _ := strings.Cut(rest, "?")
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.Contains(query, "mode=memory") {
		return "", false
	}
	return path, true
}

// opened is the DSN the command opens: an SQLite file with mode=rw, which
// fails on a missing file instead of making it, when c opens existing
// databases only and the DSN gives no mode of its own.
func (c *fileConfig) opened(d string) string {
	if _, ok := sqliteFile(d); !ok || !c.existing {
		return d
	}
	_, query, hasQuery := strings.Cut(d, "?")
	switch {
	case strings.Contains(query, "mode="):
		return d
	case hasQuery:
		return d + "&mode=rw"
	}
	return d + "?mode=rw"
}

// defaultConnectTimeout is the plugin's (Config.ConnectTimeout), which
// bounds opening the plugin's database too.
const defaultConnectTimeout = 5 * time.Second

// dialBound is how long a database has to open.
func (c *fileConfig) dialBound() time.Duration {
	if c.connectTimeout > 0 {
		return c.connectTimeout
	}
	return defaultConnectTimeout
}

// openMain opens the plugin's database within bound: gorm.Open's dial and
// ping take no context, and a server that accepts and never answers would
// hold the command for as long as its driver waits, maybe for ever.
func openMain(d gorm.Dialector, bound time.Duration) (*gorm.DB, error) {
	type result struct {
		db  *gorm.DB
		err error
	}
	opened := make(chan result, 1)
	go func() {
		db, err := gorm.Open(d, &gorm.Config{Logger: logger.Discard}) // the commands report failed statements as their errors
		opened <- result{db, err}
	}()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case r := <-opened:
		return r.db, r.err
	case <-timer.C:
		go func() { // closed once it opens, if ever
			if r := <-opened; r.err == nil {
				_ = closeDB(r.db)
			}
		}()
		return nil, fmt.Errorf("it did not answer within %v", bound)
	}
}

// close releases the plugin (its process entry in the shared map's tables
// too) and the plugin's database.
func (s *opsSetup) close() error { return errors.Join(s.plugin.Close(), closeDB(s.db)) }

func closeDB(db *gorm.DB) error {
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// withConfig runs fn with the plugin of the --config file, and closes it.
// Its plugin checks the database each shard name opens against what the
// plugin's database records, and records nothing: a command that only
// reads, given a file naming a new shard by a mistyped DSN, does not bind
// the name to that database (the application opening it by the right one
// would be refused).
func withConfig(cmd *cobra.Command, path string, fn func(*opsSetup) error) (err error) {
	return withConfigBounded(cmd, path, false, 0, fn)
}

// withSharedMap is withConfig for the commands that move data, whose
// plugin records the database each shard name opens when binds is set: a
// move binds its target to the database it writes; a cancel or cleanup
// works on databases its move bound, and checks them.
func withSharedMap(cmd *cobra.Command, path string, binds bool, fn func(*opsSetup) error) (err error) {
	return withConfigBounded(cmd, path, binds, 0, fn)
}

// withConfigBounded is withConfig, binding the shard names when binds is
// set, whose plugin dials each database within connectTimeout (0: the
// plugin's default). The file's map table must be one an application
// shares.
func withConfigBounded(cmd *cobra.Command, path string, binds bool, connectTimeout time.Duration, fn func(*opsSetup) error) (err error) {
	c, err := readConfig(path)
	if err != nil {
		return err
	}
	c.connectTimeout, c.existing, c.checkOnly = connectTimeout, true, !binds
	s, err := openConfigOf(c, cmd.ErrOrStderr(), true)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	return fn(s)
}

// warnHandler prints the plugin's warnings, "warning: message key=value
// ...", and gives its other events (leases, map versions, a move's phases) to
// the default logger.
type warnHandler struct{ out io.Writer }

func (h warnHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return slog.Default().Handler().Handle(ctx, r)
	}
	line := "warning: " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	_, err := fmt.Fprintln(h.out, line)
	return err
}

func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h } // the plugin gives every event its attributes
func (h warnHandler) WithGroup(string) slog.Handler      { return h }
