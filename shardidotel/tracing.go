// Package shardidotel puts shardid's routing on OpenTelemetry spans: the
// span a statement runs in (opened by gorm.io/plugin/opentelemetry, or by
// the application) gets db.shardid.physical and db.shardid.logical, and
// each part of a statement over several physical databases gets a child
// span of its own. It is a module of its own, so that the library does not
// depend on OpenTelemetry.
//
//	db.Use(tracing.NewPlugin())  // gorm.io/plugin/opentelemetry, first: its span then covers the parts of a query
//	db.Use(ids)                  // shardid
//	db.Use(shardidotel.New(ids))
package shardidotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.30.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/shardid/shardid"
)

// TracerName is the instrumentation scope of the parts' spans.
const TracerName = "github.com/shardid/shardid/shardidotel"

// The attributes.
const (
	PhysicalKey = attribute.Key("db.shardid.physical") // a string, or the list for a statement over several databases
	LogicalKey  = attribute.Key("db.shardid.logical")  // an int, or the list
)

// Option configures the plugin.
type Option func(*Plugin)

// WithTracerProvider sets where the parts' spans come from. Default: the
// global provider (otel.GetTracerProvider), also when it is set after
// db.Use, as for gorm.io/plugin/opentelemetry.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(p *Plugin) { p.provider = tp }
}

// Plugin is the GORM plugin; register it after shardid's.
type Plugin struct {
	ids      *shardid.Plugin
	provider trace.TracerProvider
	tracer   trace.Tracer
}

// New returns the plugin that traces ids' routing.
func New(ids *shardid.Plugin, opts ...Option) *Plugin {
	p := &Plugin{ids: ids}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name implements gorm.Plugin.
func (p *Plugin) Name() string { return "shardidotel" }

// Initialize implements gorm.Plugin.
func (p *Plugin) Initialize(db *gorm.DB) error {
	if p.ids == nil {
		return errors.New("shardidotel: New was given a nil shardid plugin")
	}
	if p.provider == nil {
		p.provider = otel.GetTracerProvider()
	}
	p.tracer = p.provider.Tracer(TracerName)
	p.ids.TraceParts(p.part)
	cb := db.Callback()
	type hook struct {
		register func(name string, fn func(*gorm.DB)) error
		name     string
	}
	// Before gorm.io/plugin/opentelemetry ends the statement's span (with
	// only a Before: GORM refuses orders it cannot satisfy both ways round).
	for _, h := range []hook{
		{cb.Create().Before("otel:after:create").Register, "create"},
		{cb.Query().Before("otel:after:select").Register, "query"},
		{cb.Update().Before("otel:after:update").Register, "update"},
		{cb.Delete().Before("otel:after:delete").Register, "delete"},
		{cb.Row().Before("otel:after:row").Register, "row"},
		{cb.Raw().Before("otel:after:raw").Register, "raw"},
	} {
		if err := h.register("shardidotel:"+h.name, p.annotate); err != nil {
			return fmt.Errorf("shardidotel: registering %s: %w", h.name, err)
		}
	}
	return nil
}

// annotate puts the statement's route on the span it runs in.
func (p *Plugin) annotate(db *gorm.DB) {
	span := trace.SpanFromContext(db.Statement.Context)
	if !span.IsRecording() {
		return
	}
	r, ok := p.ids.RouteOf(db)
	if !ok {
		return
	}
	if len(r.Physical) == 1 {
		span.SetAttributes(PhysicalKey.String(r.Physical[0]))
	} else {
		span.SetAttributes(PhysicalKey.StringSlice(r.Physical))
	}
	switch len(r.Logical) {
	case 0: // set even so: an application's span of several statements holds the last one's, not an earlier one's
		span.SetAttributes(LogicalKey.IntSlice([]int{}))
	case 1:
		span.SetAttributes(LogicalKey.Int(r.Logical[0]))
	default:
		span.SetAttributes(LogicalKey.IntSlice(r.Logical))
	}
}

// part opens the span of a part on one physical database, named as
// gorm.io/plugin/opentelemetry names a statement's: by its operation and
// table (db.query.summary), with its SQL once it ran.
func (p *Plugin) part(ctx context.Context, part shardid.TracedPart) (context.Context, func(string, error)) {
	summary := part.Operation
	if part.Table != "" {
		summary += " " + part.Table
	}
	ctx, span := p.tracer.Start(ctx, summary, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(PhysicalKey.String(part.Physical), semconv.DBOperationName(part.Operation),
			semconv.DBCollectionName(part.Table), semconv.DBQuerySummary(summary)))
	return ctx, func(sql string, err error) {
		if sql != "" {
			span.SetAttributes(semconv.DBQueryText(sql))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
