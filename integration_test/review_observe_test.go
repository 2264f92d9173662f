package integration

import (
	"log"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/opentelemetry/tracing"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidotel"
)

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
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir)})
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

// TestReviewOtelChainRunTwiceSpansAreSiblings runs one chain (Count, then
// Find, as a paginated listing does) on an unsharded model: without shardid
// counting or tracing the two spans are roots, as they are with shardid
// alone: the Find's span must not be a child of the Count's ended span.
func TestReviewOtelChainRunTwiceSpansAreSiblings(t *testing.T) {
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

// TestReviewOtelFanOutWritePartsInTheirSpans: each part of an update or
// delete over three databases runs as a GORM statement; PartTracer says the
// context the tracer returns is the part's, so the OpenTelemetry plugin's
// span of each part must be a child of its "shardid part" span.
func TestReviewOtelFanOutWritePartsInTheirSpans(t *testing.T) {
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
			if strings.HasPrefix(s.Name, "shardid part") {
				partSpans[s.SpanContext.SpanID().String()] = true
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

// TestReviewOtelAfterShardid registers gorm.io/plugin/opentelemetry after
// shardid (LogPhysical on): the span's db.query.text must be the SQL that
// ran, not the log line shardid made of it, and a chain run twice must find
// its context as it was.
func TestReviewOtelAfterShardid(t *testing.T) {
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
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir), LogPhysical: true})
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

// TestReviewOtelAfterShardidStaleClock: with the OpenTelemetry plugin
// registered after shardid, a chain's clock stays in its context, and the
// chain's next statement is timed from the first one's start.
func TestReviewOtelAfterShardidStaleClock(t *testing.T) {
	dir := t.TempDir()
	b := backends[0]
	db, err := gorm.Open(b.dialector(t, dir), &gorm.Config{Logger: logger.Discard})
	must(t, err)
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ids := shardid.New(shardid.Config{Shards: threeShards(t, b, dir)})
	must(t, db.Use(ids))
	t.Cleanup(func() { _ = ids.Close() })
	must(t, db.Use(tracing.NewPlugin(tracing.WithTracerProvider(sdktrace.NewTracerProvider()), tracing.WithoutMetrics())))
	fresh(t, db, &ObsUser{}, &ObsNote{})
	user := ObsUser{Name: "ada"}
	must(t, db.Create(&user).Error)
	ids.CountStatements()
	q := db.Model(&ObsUser{}).Where("id = ?", user.ID)
	var n int64
	must(t, q.Count(&n).Error)
	time.Sleep(1500 * time.Millisecond)
	must(t, q.Count(&n).Error)
	var seconds float64
	for _, s := range ids.StatementStats() {
		if s.Kind == "query" {
			seconds += s.Seconds
		}
	}
	if seconds > 1 { // two counts of one row; the pause between them is no statement's
		t.Errorf("two counts took %.2fs, the pause between them counted", seconds)
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

// TestReviewFanOutLineKeepsValues: the line of an update over three
// databases is made of its parts' lines, explained already; the statement's
// line is explained again, and on PostgreSQL a value holding "$1" comes out
// altered ('cost $1$'). Checked on the reviewer's own PostgreSQL databases.
func TestReviewFanOutLineKeepsValues(t *testing.T) {
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
