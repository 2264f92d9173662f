package integration

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/opentelemetry/tracing"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidotel"
	"github.com/shardid/shardid/shardidprom"
)

type ObsUser struct {
	ID   int64 `shardid:""`
	Name string
}

// threeShards maps the logical shards onto three physical databases of b.
func threeShards(t testing.TB, b backend, dir string) []shardid.Shard {
	count := shardid.Layout{}.ShardCount()
	list := shards(t, b, dir)[:3]
	for i := range list {
		list[i].Logical = []shardid.Range{{From: i * count / 3, To: (i+1)*count/3 - 1}}
	}
	return list
}

// TestPrometheusCollector runs a known mix of statements over three physical
// databases and gathers the collector from a registry: each statement is
// counted once, on its database and kind, the failed ones and the fan-out
// too, with the IDs issued, each database up and its pool.
func TestPrometheusCollector(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		list := threeShards(t, b, dir)
		db := open(t, b, dir, shardid.Config{Shards: list})
		ids := db.Config.Plugins["shardid"].(*shardid.Plugin)
		fresh(t, db, &ObsUser{})
		registry := prometheus.NewRegistry()
		registry.MustRegister(shardidprom.New(ids))
		name := func(i int) string { return list[i].Name }
		third := shardid.Layout{}.ShardCount() / 3

		users := make([]ObsUser, 4)
		for i, s := range []int{10, 20, third + 10, 2*third + 10} { // 0, 0, 1, 2
			users[i].Name = "u"
			must(t, db.Clauses(shardid.OnShard(s)).Create(&users[i]).Error)
		}
		var got ObsUser
		must(t, db.First(&got, users[2].ID).Error) // query on 1
		var missing ObsUser
		if err := db.First(&missing, ids.Layout().Compose(ids.Layout().Epoch, 30, 0)).Error; !errors.Is(err, gorm.ErrRecordNotFound) {
			t.Fatalf("a missing row: %v", err) // query on 0, no failure
		}
		var all []ObsUser
		must(t, db.Clauses(shardid.AllShards()).Find(&all).Error)              // query on 0, 1, 2: a fan-out
		must(t, db.Model(&ObsUser{ID: users[3].ID}).Update("name", "v").Error) // update on 2
		must(t, db.Delete(&ObsUser{ID: users[0].ID}).Error)                    // delete on 0
		if err := db.Clauses(shardid.OnShard(third + 10)).Exec("UPDATE no_such_table SET x = 1").Error; err == nil {
			t.Fatal("an update of a missing table succeeded") // raw on 1, failed
		}

		families, err := registry.Gather()
		must(t, err)
		value := func(family string, labels map[string]string) (float64, bool) {
			for _, f := range families {
				if f.GetName() != family {
					continue
				}
				for _, m := range f.GetMetric() {
					if matches(m, labels) {
						switch {
						case m.Counter != nil:
							return m.GetCounter().GetValue(), true
						case m.Gauge != nil:
							return m.GetGauge().GetValue(), true
						case m.Histogram != nil:
							return float64(m.GetHistogram().GetSampleCount()), true
						}
					}
				}
			}
			return 0, false
		}
		type key struct {
			physical int
			kind     string
		}
		want := map[key][2]float64{
			{0, "create"}: {2, 0}, {1, "create"}: {1, 0}, {2, "create"}: {1, 0},
			{0, "query"}: {2, 0}, {1, "query"}: {2, 0}, {2, "query"}: {1, 0},
			{2, "update"}: {1, 0}, {0, "delete"}: {1, 0}, {1, "raw"}: {1, 1},
		}
		for i := range 3 {
			for _, kind := range shardid.StatementKinds() {
				labels := map[string]string{"physical": name(i), "kind": kind}
				w := want[key{i, kind}]
				n, ok := value("shardid_statements_total", labels)
				failed, _ := value("shardid_statement_errors_total", labels)
				timed, _ := value("shardid_statement_duration_seconds", labels)
				if !ok || n != w[0] || failed != w[1] || timed != w[0] {
					t.Errorf("%s %s: %v statements (%v), %v failed, %v timed; want %v, %v", name(i), kind, n, ok, failed, timed, w[0], w[1])
				}
			}
			if up, ok := value("shardid_physical_up", map[string]string{"physical": name(i)}); !ok || up != 1 {
				t.Errorf("%s up: %v (%v)", name(i), up, ok)
			}
			if open, ok := value("shardid_pool_open_connections", map[string]string{"physical": name(i)}); !ok || open < 1 {
				t.Errorf("%s open connections: %v (%v)", name(i), open, ok)
			}
		}
		if n, _ := value("shardid_fanout_statements_total", map[string]string{"kind": "query"}); n != 1 {
			t.Errorf("fan-out queries: %v, want 1", n)
		}
		if n, _ := value("shardid_ids_issued_total", map[string]string{"strategy": "instagram"}); n != 4 {
			t.Errorf("instagram IDs issued: %v, want 4", n)
		}
		if n, ok := value("shardid_ticket_failovers_total", nil); !ok || n != 0 {
			t.Errorf("ticket failovers: %v (%v)", n, ok)
		}
	})
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
			return false
		}
	}
	return true
}

// TestOpenTelemetrySpans registers gorm.io/plugin/opentelemetry beside
// shardid and shardidotel, with an in-memory exporter: a statement's span
// carries its physical database and logical shard, beside what the
// OpenTelemetry plugin read from the real dialector; a statement over three
// databases carries them all, and has a child span on each.
func TestOpenTelemetrySpans(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		list := threeShards(t, b, dir)
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
		must(t, err)
		t.Cleanup(func() {
			if sqlDB, err := db.DB(); err == nil {
				_ = sqlDB.Close()
			}
		})
		firstStart(t, db)
		// The OpenTelemetry plugin first, as the documentation says, then shardid.
		must(t, db.Use(tracing.NewPlugin(tracing.WithTracerProvider(tp), tracing.WithoutMetrics())))
		ids := shardid.New(shardid.Config{Shards: list, Atomic: b.atomicity()})
		must(t, db.Use(ids))
		t.Cleanup(func() { _ = ids.Close() })
		must(t, db.Use(shardidotel.New(ids, shardidotel.WithTracerProvider(tp))))
		fresh(t, db, &ObsUser{})
		third := shardid.Layout{}.ShardCount() / 3
		user := ObsUser{Name: "ada"}
		must(t, db.Clauses(shardid.OnShard(third+10)).Create(&user).Error)
		exporter.Reset()

		var got ObsUser
		must(t, db.WithContext(context.Background()).First(&got, user.ID).Error)
		var all []ObsUser
		must(t, db.Clauses(shardid.AllShards()).Find(&all).Error)

		var statements []tracetest.SpanStub
		for _, s := range exporter.GetSpans() {
			if !isPartSpan(s) {
				statements = append(statements, s)
			}
		}
		if len(statements) != 2 {
			t.Fatalf("%d statement spans, want 2: %v", len(statements), spanNames(exporter.GetSpans()))
		}
		one, fan := statements[0], statements[1]
		if v, _ := spanAttr(one, shardidotel.PhysicalKey); v.AsString() != list[1].Name {
			t.Errorf("First: physical %v, want %s", v.Emit(), list[1].Name)
		}
		if v, _ := spanAttr(one, shardidotel.LogicalKey); v.AsInt64() != int64(third+10) {
			t.Errorf("First: logical %v, want %d", v.Emit(), third+10)
		}
		if v, ok := spanAttr(one, "db.system.name"); !ok && !hasAttr(one, "db.system") {
			t.Errorf("the OpenTelemetry plugin did not name the database system: %v (%v)", one.Attributes, v)
		}
		if b.name != "sqlite" && !hasAttr(one, "server.address") {
			t.Errorf("the OpenTelemetry plugin did not read the server from the dialector: %v", one.Attributes)
		}
		// The OpenTelemetry plugin ends the statement's span after its parts
		// ran: a success, named by its operation and table.
		if fan.Status.Code == codes.Error || fan.Name != "select obs_users" {
			t.Errorf("Find on all shards: span %q with status %v %q, want \"select obs_users\" without an error", fan.Name, fan.Status.Code, fan.Status.Description)
		}
		names := []string{list[0].Name, list[1].Name, list[2].Name}
		if v, _ := spanAttr(fan, shardidotel.PhysicalKey); !slices.Equal(v.AsStringSlice(), names) {
			t.Errorf("Find on all shards: physical %v, want %v", v.Emit(), names)
		}
		var parts []string
		for _, s := range exporter.GetSpans() {
			if s.Parent.SpanID() == fan.SpanContext.SpanID() {
				v, _ := spanAttr(s, shardidotel.PhysicalKey)
				parts = append(parts, v.AsString())
				// Named as the OpenTelemetry plugin names a statement's span, with the SQL the part ran.
				if query, _ := spanAttr(s, "db.query.text"); s.Name != "select obs_users" || !strings.Contains(strings.ToUpper(query.AsString()), "SELECT") {
					t.Errorf("a part's span is %q with db.query.text %q, want \"select obs_users\" and its SELECT", s.Name, query.AsString())
				}
			}
		}
		slices.Sort(parts)
		if !slices.Equal(parts, names) {
			t.Errorf("child spans of the fan-out on %v, want %v", parts, names)
		}
	})
}

// isPartSpan reports whether s is the span shardidotel opens for a part of a
// statement over several databases.
func isPartSpan(s tracetest.SpanStub) bool {
	return s.InstrumentationScope.Name == shardidotel.TracerName
}

func spanAttr(s tracetest.SpanStub, key attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func hasAttr(s tracetest.SpanStub, key attribute.Key) bool {
	_, ok := spanAttr(s, key)
	return ok
}

func spanNames(spans tracetest.SpanStubs) []string {
	var names []string
	for _, s := range spans {
		names = append(names, fmt.Sprintf("%s(parent %s)", s.Name, s.Parent.SpanID()))
	}
	return names
}

type ObsNote struct { // unsharded
	ID   int64
	Text string
}

// otelFirst opens SQLite with gorm.io/plugin/opentelemetry registered before
// shardid, as the shardidotel documentation says, then shardidotel.
func otelFirst(t *testing.T, mode string) (*gorm.DB, *tracetest.InMemoryExporter) {
	dir := t.TempDir()
	b := backends[0]
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	must(t, db.Use(tracing.NewPlugin(tracing.WithTracerProvider(tp), tracing.WithoutMetrics())))
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir), Atomic: b.atomicity()})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	switch mode {
	case "shardidotel":
		must(t, db.Use(shardidotel.New(ids, shardidotel.WithTracerProvider(tp))))
	case "CountStatements":
		ids.CountStatements()
	}
	fresh(t, db, &ObsUser{}, &ObsNote{})
	must(t, db.Create(&ObsNote{Text: "a"}).Error)
	exporter.Reset()
	return db, exporter
}

// TestOtelChainRunTwiceSpansAreSiblings runs one chain (Count, then
// Find, as a paginated listing does) on an unsharded model: without shardid
// counting or tracing the two spans are roots, as they are with shardid
// alone: the Find's span must not be a child of the Count's ended span.
func TestOtelChainRunTwiceSpansAreSiblings(t *testing.T) {
	for _, with := range []string{"shardid alone", "CountStatements", "shardidotel"} {
		db, exporter := otelFirst(t, with)
		q := db.Model(&ObsNote{}).Where("text = ?", "a")
		before := q.Statement.Context
		var n int64
		must(t, q.Count(&n).Error)
		var notes []ObsNote
		must(t, q.Find(&notes).Error)
		spans := exporter.GetSpans()
		if len(spans) != 2 {
			t.Fatalf("%s: %d spans", with, len(spans))
		}
		if spans[1].Parent.IsValid() {
			t.Errorf("%s: the second statement's span %q is a child of %s (the first's, ended: %v)", with, spans[1].Name, spans[1].Parent.SpanID(), spans[0].SpanContext.SpanID())
		}
		if q.Statement.Context != before {
			t.Errorf("%s: the chain's context is left as %T", with, q.Statement.Context)
		}
	}
}

// TestOtelFanOutWritePartsInTheirSpans: each part of an update or
// delete over three databases runs as a GORM statement; PartTracer says the
// context the tracer returns is the part's, so the OpenTelemetry plugin's
// span of each part must be a child of its part span, named by the
// operation and table, with the SQL the part ran.
func TestOtelFanOutWritePartsInTheirSpans(t *testing.T) {
	db, exporter := otelFirst(t, "shardidotel")
	third := shardid.Layout{}.ShardCount() / 3
	for _, s := range []int{10, third + 10, 2*third + 10} {
		must(t, db.Clauses(shardid.OnShard(s)).Create(&ObsUser{Name: "u"}).Error)
	}
	for _, c := range []struct {
		what string
		run  func() error
	}{
		{"update", func() error {
			return db.Model(&ObsUser{}).Clauses(shardid.AllShards()).Where("name = ?", "u").Update("name", "v").Error
		}},
		{"delete", func() error {
			return db.Clauses(shardid.AllShards()).Where("name = ?", "nobody").Delete(&ObsUser{}).Error
		}},
	} {
		exporter.Reset()
		must(t, c.run())
		spans := exporter.GetSpans()
		partSpans := map[string]bool{}
		for _, s := range spans {
			if isPartSpan(s) {
				partSpans[s.SpanContext.SpanID().String()] = true
				query, _ := spanAttr(s, "db.query.text")
				if s.Name != c.what+" obs_users" || !strings.HasPrefix(strings.ToUpper(query.AsString()), strings.ToUpper(c.what)) {
					t.Errorf("%s: a part's span is %q with db.query.text %q", c.what, s.Name, query.AsString())
				}
			}
		}
		if len(partSpans) != 3 {
			t.Fatalf("%s: %d part spans: %v", c.what, len(partSpans), spanNames(spans))
		}
		inPart := 0
		for _, s := range spans {
			if partSpans[s.Parent.SpanID().String()] {
				inPart++
			}
		}
		if inPart != 3 {
			t.Errorf("%s: %d of the parts' statement spans are children of the part spans, want 3: %v", c.what, inPart, spanNames(spans))
		}
	}
}

// TestOtelAfterShardid registers gorm.io/plugin/opentelemetry after
// shardid (LogPhysical on): the span's db.query.text must be the SQL that
// ran, not the log line shardid made of it, and a chain run twice must find
// its context as it was.
func TestOtelAfterShardid(t *testing.T) {
	dir := t.TempDir()
	b := backends[0]
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir), LogPhysical: true, Atomic: b.atomicity()})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, db.Use(tracing.NewPlugin(tracing.WithTracerProvider(tp), tracing.WithoutMetrics())))
	fresh(t, db, &ObsUser{})
	user := ObsUser{Name: "ada"}
	must(t, db.Create(&user).Error)

	exporter.Reset()
	q := db.Model(&ObsUser{}).Where("id = ?", user.ID)
	before := q.Statement.Context
	var n int64
	must(t, q.Count(&n).Error)
	var all []ObsUser
	must(t, db.Clauses(shardid.AllShards()).Find(&all).Error)
	for _, s := range exporter.GetSpans() {
		v, _ := spanAttr(s, "db.query.text")
		if strings.HasPrefix(v.AsString(), "[") {
			t.Errorf("span %q: db.query.text %q is shardid's log line", s.Name, v.AsString())
		}
	}
	if q.Statement.Context != before {
		t.Errorf("the chain's context is left as %T", q.Statement.Context)
	}
}

// TestOtelAfterShardidStaleClock: with the OpenTelemetry plugin
// registered after shardid, a chain's clock stays in its context, and the
// chain's next statement is timed from the first one's start.
func TestOtelAfterShardidStaleClock(t *testing.T) {
	dir := t.TempDir()
	b := backends[0]
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir), Atomic: b.atomicity()})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, db.Use(tracing.NewPlugin(tracing.WithTracerProvider(sdktrace.NewTracerProvider()), tracing.WithoutMetrics())))
	fresh(t, db, &ObsUser{}, &ObsNote{})
	user := ObsUser{Name: "ada"}
	must(t, db.Create(&user).Error)
	ids.CountStatements()
	q := db.Model(&ObsUser{}).Where("id = ?", user.ID)
	var n int64
	var counting time.Duration // the two counts' own time, as the caller sees it
	for i := range 2 {
		if i > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		start := time.Now()
		must(t, q.Count(&n).Error)
		counting += time.Since(start)
	}
	var seconds float64
	for _, s := range ids.StatementStats() {
		if s.Kind == "query" {
			seconds += s.Seconds
		}
	}
	if seconds > counting.Seconds() { // the pause between them is no statement's
		t.Errorf("two counts took %.2fs by the stats and %.2fs by the caller's clock: the pause between them counted", seconds, counting.Seconds())
	}
	// The chain's next statement is raw SQL on an unsharded table, which runs
	// on the plugin's own database: it is counted nowhere.
	must(t, q.Exec("UPDATE obs_notes SET text = ?", "x").Error)
	for _, s := range ids.StatementStats() {
		if s.Kind == "raw" && s.Count > 0 {
			t.Errorf("raw SQL on the plugin's own database counted on %s, where the chain's earlier count ran", s.Physical)
		}
	}
}

// TestFanOutLineKeepsValues: the line of an update over three databases is
// made of its parts' lines, explained already; explaining the statement's
// line again would alter a value holding "$1" on PostgreSQL ('cost $1$').
func TestFanOutLineKeepsValues(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dir := t.TempDir()
		db := open(t, b, dir, shardid.Config{Shards: threeShards(t, b, dir)})
		fresh(t, db, &ObsUser{})
		var out strings.Builder
		db.Logger = logger.New(log.New(&out, "", 0), logger.Config{LogLevel: logger.Info})
		must(t, db.Model(&ObsUser{}).Clauses(shardid.AllShards()).Where("name = ?", "zz").Update("name", "cost $1").Error)
		if strings.Count(out.String(), "cost $1") != 3 || strings.Contains(out.String(), "cost $1$") {
			t.Errorf("the value 'cost $1' is not in each part's line as given:\n%s", out.String())
		}
	})
}
