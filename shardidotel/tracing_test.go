package shardidotel_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/shardid/shardid"
	"github.com/shardid/shardid/shardidotel"
)

type User struct {
	ID   int64 `shardid:""`
	Name string
}

// open registers shardid over three SQLite databases and the tracing plugin
// with an in-memory exporter.
func open(t *testing.T) (*gorm.DB, *shardid.Plugin, *sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	db, ids := openWith(t, shardidotel.WithTracerProvider(tp))
	return db, ids, tp, exporter
}

// openWith registers shardid over three SQLite databases and the tracing
// plugin with opts.
func openWith(t *testing.T, opts ...shardidotel.Option) (*gorm.DB, *shardid.Plugin) {
	t.Helper()
	dir := t.TempDir()
	dial := func(name string) gorm.Dialector { return sqlite.Open(filepath.Join(dir, name)) }
	db, err := gorm.Open(dial("main.db"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var shards []shardid.Shard
	for i := range 3 {
		shards = append(shards, shardid.Shard{Name: fmt.Sprintf("s%d", i), Dialector: dial(fmt.Sprintf("s%d.db", i)), Logical: []shardid.Range{{From: i * 3000, To: min(i*3000+2999, 8191)}}})
	}
	ids := shardid.New(shardid.Config{Shards: shards})
	if err := db.Use(ids); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ids.Close() })
	if err := db.Use(shardidotel.New(ids, opts...)); err != nil {
		t.Fatal(err)
	}
	if err := ids.AutoMigrate(db, &User{}); err != nil {
		t.Fatal(err)
	}
	return db, ids
}

func attr(s tracetest.SpanStub, key attribute.Key) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestSpanAttributes: a statement's span names its physical database and
// logical shard; a statement over all three databases names them all, and
// each part gets a child span naming its database.
func TestSpanAttributes(t *testing.T) {
	db, ids, tp, exporter := open(t)
	user := User{Name: "ada"}
	if err := db.Clauses(shardid.OnShard(4000)).Create(&user).Error; err != nil {
		t.Fatal(err)
	}
	tracer := tp.Tracer("test")

	ctx, span := tracer.Start(context.Background(), "read one")
	var got User
	if err := db.WithContext(ctx).First(&got, user.ID).Error; err != nil {
		t.Fatal(err)
	}
	span.End()
	ctx, span = tracer.Start(context.Background(), "read one, then all")
	if err := db.WithContext(ctx).First(&got, user.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.WithContext(ctx).Clauses(shardid.AllShards()).Find(&[]User{}).Error; err != nil {
		t.Fatal(err)
	}
	span.End()
	ctx, span = tracer.Start(context.Background(), "read all")
	var all []User
	if err := db.WithContext(ctx).Clauses(shardid.AllShards()).Find(&all).Error; err != nil {
		t.Fatal(err)
	}
	span.End()

	spans := exporter.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	one := byName["read one"]
	if v, _ := attr(one, shardidotel.PhysicalKey); v.AsString() != "s1" {
		t.Errorf("read one: physical %v, want s1", v.Emit())
	}
	if v, _ := attr(one, shardidotel.LogicalKey); v.AsInt64() != int64(ids.Layout().Shard(user.ID)) {
		t.Errorf("read one: logical %v, want %d", v.Emit(), ids.Layout().Shard(user.ID))
	}
	if v, _ := attr(byName["read one, then all"], shardidotel.LogicalKey); v.Type() != attribute.INT64SLICE || len(v.AsInt64Slice()) != 0 {
		t.Errorf("a span whose last statement reads every shard names logical shards %v, an earlier statement's", v.Emit())
	}
	fan := byName["read all"]
	if v, _ := attr(fan, shardidotel.PhysicalKey); !slices.Equal(v.AsStringSlice(), []string{"s0", "s1", "s2"}) {
		t.Errorf("read all: physical %v, want [s0 s1 s2]", v.Emit())
	}
	if v, _ := attr(fan, shardidotel.LogicalKey); v.Type() != attribute.INT64SLICE || len(v.AsInt64Slice()) != 0 {
		t.Errorf("read all names logical shards %v, though no row or condition names any", v.Emit())
	}
	var parts []string
	for _, s := range spans {
		if s.Parent.SpanID() == fan.SpanContext.SpanID() {
			v, _ := attr(s, shardidotel.PhysicalKey)
			parts = append(parts, v.AsString())
			if query, _ := attr(s, "db.query.text"); s.Name != "select users" || !strings.HasPrefix(query.AsString(), "SELECT") {
				t.Errorf("a part of read all is the span %q with db.query.text %q, want \"select users\" and its SELECT", s.Name, query.AsString())
			}
		}
	}
	slices.Sort(parts)
	if !slices.Equal(parts, []string{"s0", "s1", "s2"}) {
		t.Errorf("child spans of read all on %v, want one on each of s0, s1, s2", parts)
	}
	for _, s := range spans {
		if s.Parent.SpanID() == one.SpanContext.SpanID() {
			t.Errorf("read one, on one database, has a child span %s", s.Name)
		}
	}
}

// TestGlobalTracerProvider: without WithTracerProvider the parts' spans come
// from the global provider, also one set after db.Use.
func TestGlobalTracerProvider(t *testing.T) {
	db, _ := openWith(t)
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	before := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(before) })
	var all []User
	if err := db.Clauses(shardid.AllShards()).Find(&all).Error; err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, s := range exporter.GetSpans() {
		if s.InstrumentationScope.Name == shardidotel.TracerName {
			parts++
		}
	}
	if parts != 3 {
		t.Fatalf("%d part spans from the global provider, want 3", parts)
	}
}

// TestNilPluginIsRefused: db.Use(shardidotel.New(nil)) is bad input, to be
// refused with an error, not a panic.
func TestNilPluginIsRefused(t *testing.T) {
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "main.db")), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("db.Use(shardidotel.New(nil)) panicked: %v", r)
		}
	}()
	if err := db.Use(shardidotel.New(nil)); err == nil {
		t.Error("db.Use(shardidotel.New(nil)) was accepted")
	}
}
