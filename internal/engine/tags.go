package engine

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"gorm.io/gorm/schema"

	"github.com/shardid/shardid/shardrouter"
	"github.com/shardid/shardid/strategies"
)

// TagName is the struct tag that marks a field as a shardid ID:
//
//	ID int64 `shardid:"strategy:snowflake;colocate:UserID"`
const TagName = "shardid"

// Tag keys.
const (
	tagStrategy  = "strategy"
	tagColocate  = "colocate"
	tagHash      = "hash"
	tagCollation = "collation"
)

// Values of collation: how the hash key's column compares strings.
const (
	collationExact = "exact" // byte for byte: the default
	collationLoose = "loose" // ignoring case, accents, width and trailing spaces
)

// strategyNames are the strategies a tag may name, in the order errors list them.
var strategyNames = []string{strategies.NameInstagram, strategies.NameSnowflake, strategies.NameSegment, strategies.NameTicket}

// uuidVersions are the UUID strategies a tag may name, and their versions.
var uuidVersions = map[string]int{strategies.NameUUIDv7: 7, strategies.NameUUIDv4: 4}

// allowedStrategies lists every strategy a tag may name, for errors.
func allowedStrategies() string {
	return strings.Join(append(slices.Clone(strategyNames), strategies.NameUUIDv7, strategies.NameUUIDv4), ", ")
}

// fieldTag is the parsed value of one shardid tag.
type fieldTag struct {
	strategy string // empty: the plugin's default
	colocate string // name of the field whose ID's shard this row takes
	hash     string // name of the field whose value is hashed into the shard
	loose    bool   // collation:loose: the hash key is hashed as LooseKey
}

// parseTag parses `strategy:NAME;colocate:Field;hash:Field;collation:loose`;
// every part is optional, and an empty tag means the defaults.
func parseTag(tag string) (fieldTag, error) {
	var t fieldTag
	seen := map[string]bool{}
	for part := range strings.SplitSeq(tag, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, value, found := strings.Cut(part, ":")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !found || value == "" {
			return t, fmt.Errorf("%q is not key:value (keys: strategy, colocate, hash, collation)", part)
		}
		if seen[key] {
			return t, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case tagStrategy:
			if _, isUUID := uuidVersions[value]; !isUUID && !slices.Contains(strategyNames, value) {
				return t, fmt.Errorf("unknown strategy %q (allowed: %s)", value, allowedStrategies())
			}
			t.strategy = value
		case tagColocate:
			t.colocate = value
		case tagHash:
			t.hash = value
		case tagCollation:
			if value != collationExact && value != collationLoose {
				return t, fmt.Errorf("unknown collation %q (allowed: %s, %s)", value, collationExact, collationLoose)
			}
			t.loose = value == collationLoose
		default:
			return t, fmt.Errorf("unknown key %q (allowed: strategy, colocate, hash, collation)", key)
		}
	}
	if t.colocate != "" && t.hash != "" {
		return t, fmt.Errorf("colocate and hash both choose the shard; use one")
	}
	if seen[tagCollation] && t.hash == "" {
		return t, fmt.Errorf("collation says how a hash key compares; it needs hash")
	}
	return t, nil
}

// idField is one shardid-tagged field of a model, ready to fill.
type idField struct {
	field       *schema.Field
	strategy    string               // the tag's, or the default
	generator   strategies.Generator // nil for a UUID field
	uuidVersion int                  // 7 or 4 for a UUID field
	colocate    *schema.Field        // the row's shard is this ID's shard
	parent      *schema.Relationship // belongs-to whose foreign key is colocate, if any
	hash        *schema.Field        // the row's shard is the hash of this value
	looseHash   bool                 // hash is a string hashed as LooseKey
}

// model is what the plugin knows of one schema: its tagged fields, in the
// order they must be filled (a colocated field after the field it follows).
type model struct {
	schema   *schema.Schema
	fields   []*idField
	key      *idField                // the tagged primary key: the model is sharded by it
	evidence []evidence              // columns whose values name a row's shard, the key first
	keys     []shardrouter.KeyColumn // the evidence, as the planner reads it
	placings []shardrouter.Placing   // the columns whose values place a row, the key first
	// createsRefused refuses a Create of a model without a placement rule
	// on a table recorded with one (samePlacement): its reads find the rows
	// by their IDs, but a row it placed would be where the rule's readers
	// miss it.
	createsRefused error
	// strategyRefused refuses a Create that fills one of its fields, whose
	// strategy is not the one recorded for its table (sameStrategy): the
	// two make the same IDs. One of preset values makes none.
	strategyRefused []fieldRefusal
	// uniqueKeys are the table's unique keys but the primary key, read once:
	// GORM's ParseIndexes writes to the schema it reads, which statements share.
	uniqueKeys [][]*schema.Field
	// keyFromDatabase: GORM took the key for the database's to fill
	// (auto-increment), and so reads it back where the dialect can.
	keyFromDatabase bool
}

// sharded reports whether the model's rows are spread over logical shards:
// its primary key is a shardid field.
func (m *model) sharded() bool { return m.key != nil }

// pk returns the tagged primary key of a sharded model.
func (m *model) pk() *idField { return m.key }

// parseModel reads the shardid tags of s. It returns a *FieldError wrapping
// ErrInvalidTag for the first unusable one.
func (e *Engine) parseModel(s *schema.Schema) (*model, error) {
	m := &model{schema: s}
	if s.ModelType.Name() == "" && len(s.PrimaryFields) > 1 {
		// A many2many's join table, a struct GORM makes of both sides' keys:
		// they copy the owners' whole tags when these say primaryKey, and
		// their shardid tags place the owners, not it (its rows live beside
		// their owner). An application's unnamed struct keeps its tags.
		return m, nil
	}
	if name := taggedEmbedded(s.ModelType); name != "" {
		return nil, &FieldError{Model: s.Name, Field: name, Err: ErrInvalidTag,
			Detail: "the tag is on an embedded struct, whose fields it does not reach: put it on the ID field (beside gorm.Model, ID int64 `shardid:\"\"` hides gorm.Model's ID)"}
	}
	if name := unexportedTag(s.ModelType, false); name != "" {
		return nil, &FieldError{Model: s.Name, Field: name, Err: ErrInvalidTag,
			Detail: "the tag is on a field GORM leaves out, unexported or of an unexported embedded struct, so the model would live unsharded on the plugin's database: export it"}
	}
	for _, f := range s.Fields {
		tag, ok := f.Tag.Lookup(TagName)
		if !ok {
			continue
		}
		bad := func(format string, args ...any) error {
			return &FieldError{Model: s.Name, Field: f.Name, Err: ErrInvalidTag, Detail: fmt.Sprintf(format, args...)}
		}
		t, err := parseTag(tag)
		if err != nil {
			return nil, bad("%v", err)
		}
		idf := &idField{field: f}
		if t.strategy == "" {
			t.strategy = e.config.DefaultStrategy
		}
		idf.uuidVersion, idf.strategy = uuidVersions[t.strategy], t.strategy
		switch kind := f.FieldType.Kind(); {
		case idf.uuidVersion != 0 && !isUUIDType(f.FieldType):
			return nil, bad("type %s cannot hold a UUID (allowed for %s: string, uuid.UUID or another [16]byte type with Value and Scan)", f.FieldType, t.strategy)
		case idf.uuidVersion != 0 && kind == reflect.Array && !(f.FieldType.Implements(valuerType) && reflect.PointerTo(f.FieldType).Implements(scannerType)):
			return nil, bad("type %s cannot be stored: database/sql binds no array (use uuid.UUID, a [16]byte with Value and Scan, or a string)", f.FieldType)
		case idf.uuidVersion == 0 && kind != reflect.Int64 && kind != reflect.Uint64:
			return nil, bad("type %s cannot hold an ID of strategy %s (allowed: int64, uint64, shardid.ID; for a string or [16]byte, uuidv7 or uuidv4)", f.FieldType, t.strategy)
		case idf.uuidVersion == 0 && !bindsAsItsNumber(f.FieldType):
			return nil, bad("type %s: its Value sends another number than the ID it holds, so rows would be stored under keys the plugin did not make (allowed: int64, uint64, shardid.ID, or a type whose Value sends its number)", f.FieldType)
		}
		if f.PrimaryKey && f.TagSettings["AUTOINCREMENT"] != "" && f.TagSettings["AUTOINCREMENT"] != "false" {
			return nil, bad("a shardid field is filled before the insert and cannot be autoIncrement")
		}
		if !f.Creatable {
			return nil, bad("the plugin writes the ID in the INSERT, and the field's gorm tag keeps it out (<-:false, <-:update or ->): allow it to be created")
		}
		if f.HasDefaultValue && f.DefaultValueInterface == nil && f.DefaultValue != "" {
			return nil, bad("the plugin writes the ID in the INSERT, and GORM leaves a field with a database default (default:%s) out of it: drop the default", f.DefaultValue)
		}
		if f.PrimaryKey && len(s.PrimaryFields) > 1 {
			return nil, bad("a sharded model has one primary key, the shardid field; %s has %d: make the others a unique index", s.Name, len(s.PrimaryFields))
		}
		idf.generator = e.generators[t.strategy]
		if t.strategy == strategies.NameTicket && idf.generator == nil {
			return nil, bad("strategy ticket needs ticket servers: set Config.Ticket.Servers")
		}
		if t.colocate != "" {
			src := tagField(s, f, t.colocate)
			switch {
			case src == nil && ambiguous(s, t.colocate):
				return nil, bad("colocate: %q names a field of each of two embedded structs: name its column instead", t.colocate)
			case src == nil:
				return nil, bad("colocate: no field %q in %s", t.colocate, s.Name)
			case src == f:
				return nil, bad("colocate: a field cannot follow its own shard")
			case src.FieldType.Kind() != reflect.Int64 && src.FieldType.Kind() != reflect.Uint64 && !isUUIDType(src.FieldType):
				return nil, bad("colocate: field %s is %s, not an ID (int64, uint64, or a UUID)", src.Name, src.FieldType)
			}
			idf.colocate = src
			idf.parent = belongsToBy(s, src)
		}
		if t.hash != "" {
			src := tagField(s, f, t.hash)
			if src == nil && ambiguous(s, t.hash) {
				return nil, bad("hash: %q names a field of each of two embedded structs: name its column instead", t.hash)
			}
			if src == nil {
				return nil, bad("hash: no field %q in %s", t.hash, s.Name)
			}
			if src == f {
				return nil, bad("hash: a field cannot be placed by its own hash")
			}
			if !hashable(src.FieldType) {
				return nil, bad("hash: field %s is %s (allowed: string, []byte, integers, [16]byte)", src.Name, src.FieldType)
			}
			if t.loose && src.FieldType.Kind() != reflect.String {
				return nil, bad("collation:loose: field %s is %s; only a string compares by collation", src.Name, src.FieldType)
			}
			idf.hash, idf.looseHash = src, t.loose
		}
		m.fields = append(m.fields, idf)
	}
	if err := orderColocated(m); err != nil {
		return nil, err
	}
	for _, f := range m.fields {
		if f.field.PrimaryKey && len(s.PrimaryFields) == 1 {
			m.key, m.evidence = f, evidenceOf(s, f)
			m.keys = e.conditionKeys(m.evidence, f)
			m.placings = e.placingsOf(f, e.keyColumns(m.evidence))
			m.uniqueKeys = uniqueKeysOf(s)
		}
	}
	return m, nil
}

// uniqueKeysOf returns the unique keys of s other than its primary key: its
// unique fields and unique indexes.
func uniqueKeysOf(s *schema.Schema) [][]*schema.Field {
	var keys [][]*schema.Field
	for _, f := range s.Fields {
		if f.Unique && !f.PrimaryKey {
			keys = append(keys, []*schema.Field{f})
		}
	}
	for _, idx := range s.ParseIndexes() {
		if strings.EqualFold(idx.Class, "UNIQUE") {
			key := make([]*schema.Field, len(idx.Fields))
			for i, f := range idx.Fields {
				key[i] = f.Field
			}
			keys = append(keys, key)
		}
	}
	return keys
}

// taggedEmbedded returns the name of a struct embedded in t, at any depth
// (a struct embedding itself through a pointer is read once), that carries
// the tag; "" if none does.
func taggedEmbedded(t reflect.Type, seen ...reflect.Type) string {
	if slices.Contains(seen, t) {
		return ""
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.Anonymous && !strings.Contains(sf.Tag.Get("gorm"), "embedded") {
			continue
		}
		if _, tagged := sf.Tag.Lookup(TagName); tagged {
			return sf.Name
		}
		inner := sf.Type
		if inner.Kind() == reflect.Pointer {
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct {
			if name := taggedEmbedded(inner, append(seen, t)...); name != "" {
				return name
			}
		}
	}
	return ""
}

// unexportedTag returns the name of a tagged field GORM does not read: an
// unexported one, or any of an unexported embedded struct (hidden); "" if none.
func unexportedTag(t reflect.Type, hidden bool, seen ...reflect.Type) string {
	if slices.Contains(seen, t) {
		return ""
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if _, tagged := sf.Tag.Lookup(TagName); tagged && (hidden || !sf.IsExported()) {
			return sf.Name
		}
		if !sf.Anonymous && !strings.Contains(sf.Tag.Get("gorm"), "embedded") {
			continue
		}
		inner := sf.Type
		if inner.Kind() == reflect.Pointer {
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct {
			if name := unexportedTag(inner, hidden || !sf.IsExported(), append(seen, t)...); name != "" {
				return name
			}
		}
	}
	return ""
}

// tagField is the field named name in the tag of field of: the one nearest
// it, as Go's selectors pick (a sibling before a field of the same name in an
// embedded struct, which GORM's FieldsByName may hold instead), else the
// field or column GORM's lookup finds.
func tagField(s *schema.Schema, of *schema.Field, name string) *schema.Field {
	for depth := len(of.BindNames) - 1; depth >= 0; depth-- {
		if f, ok := s.FieldsByBindName[strings.Join(append(slices.Clip(of.BindNames[:depth]), name), ".")]; ok {
			return f
		}
	}
	if f, count := nearestNamed(s, name, true); count > 0 { // promoted through anonymous structs, as Go's selector finds it
		return f
	}
	if _, count := nearestNamed(s, name, false); count > 1 {
		return nil
	}
	return s.LookUpField(name)
}

// ambiguous reports whether name is held at one depth by two embedded
// structs, anonymous (Go refuses the selector) or named with GORM's
// embedded tag.
func ambiguous(s *schema.Schema, name string) bool {
	if _, count := nearestNamed(s, name, true); count > 0 {
		return count > 1
	}
	_, count := nearestNamed(s, name, false)
	return count > 1
}

// nearestNamed returns the field named name nearest the model, promoted
// only (through anonymous structs) or any, and how many are that near: one
// when it is unique.
func nearestNamed(s *schema.Schema, name string, promotedOnly bool) (*schema.Field, int) {
	var nearest *schema.Field
	count := 0
	for _, f := range s.Fields {
		if f.Name != name || promotedOnly && !promoted(s.ModelType, f.BindNames) {
			continue
		}
		switch {
		case nearest == nil || len(f.BindNames) < len(nearest.BindNames):
			nearest, count = f, 1
		case len(f.BindNames) == len(nearest.BindNames):
			count++
		}
	}
	if count != 1 {
		return nil, count
	}
	return nearest, 1
}

// promoted reports whether every struct on the path to a field is embedded
// anonymously, so that Go promotes the field.
func promoted(t reflect.Type, path []string) bool {
	for _, name := range path[:len(path)-1] {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		sf, ok := t.FieldByName(name)
		if !ok || !sf.Anonymous || len(sf.Index) != 1 {
			return false
		}
		t = sf.Type
	}
	return true
}

// orderColocated puts every field that colocates with, or hashes, another
// tagged field after it, and refuses cycles.
func orderColocated(m *model) error {
	ordered := make([]*idField, 0, len(m.fields))
	placed := map[*schema.Field]bool{}
	for len(ordered) < len(m.fields) {
		progress := false
		for _, f := range m.fields {
			if placed[f.field] {
				continue
			}
			if f.colocate != nil && m.tagged(f.colocate) && !placed[f.colocate] || f.hash != nil && m.tagged(f.hash) && !placed[f.hash] {
				continue
			}
			ordered, placed[f.field], progress = append(ordered, f), true, true
		}
		if !progress {
			for _, f := range m.fields {
				if !placed[f.field] {
					return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidTag, Detail: "colocate or hash fields follow each other in a cycle"}
				}
			}
		}
	}
	m.fields = ordered
	return nil
}

func (m *model) tagged(f *schema.Field) bool {
	for _, idf := range m.fields {
		if idf.field == f {
			return true
		}
	}
	return false
}

// belongsToBy returns the belongs-to relationship whose foreign key is fk.
func belongsToBy(s *schema.Schema, fk *schema.Field) *schema.Relationship {
	for _, rel := range s.Relationships.BelongsTo {
		if len(rel.References) == 1 && rel.References[0].ForeignKey == fk {
			return rel
		}
	}
	return nil
}

// neverAutoIncrement makes the tagged primary key a plain BIGINT that every
// INSERT carries: GORM makes an int primary key auto-increment unless told.
func neverAutoIncrement(m *model) {
	for _, idf := range m.fields {
		f := idf.field
		if !f.PrimaryKey || !f.AutoIncrement && !f.HasDefaultValue {
			continue
		}
		f.AutoIncrement = false
		f.HasDefaultValue = f.DefaultValue != ""
		m.keyFromDatabase = m.keyFromDatabase || m.key != nil && m.key.field == f && slices.Contains(m.schema.FieldsWithDefaultDBValue, f)
		withDefault := make([]*schema.Field, 0, len(m.schema.FieldsWithDefaultDBValue))
		for _, d := range m.schema.FieldsWithDefaultDBValue {
			if d != f {
				withDefault = append(withDefault, d)
			}
		}
		m.schema.FieldsWithDefaultDBValue = withDefault
	}
}

// bindsAsItsNumber reports whether an integer ID type binds as the number it
// holds (a Valuer may send another: an offset, an encoding), tried on a few
// IDs across the 63 bits.
func bindsAsItsNumber(t reflect.Type) bool {
	for _, n := range []int64{1, 1<<40 | 12345, math.MaxInt64} {
		v := reflect.New(t).Elem()
		if t.Kind() == reflect.Int64 {
			v.SetInt(n)
		} else {
			v.SetUint(uint64(n))
		}
		if bound, err := int64Of(v.Interface()); err != nil || bound != n {
			return false
		}
	}
	return true
}

// oneStrategyPerColumn refuses a model whose tagged column another model of
// the same table fills by another strategy: IDs of two strategies (instagram's
// sequence, a snowflake worker's) meet within a tick, and the second insert
// would fail on the primary key.
func (e *Engine) oneStrategyPerColumn(m *model) error {
	type filler struct{ strategy, model string }
	for _, f := range m.fields {
		key := strings.ToLower(m.schema.Table) + "." + strings.ToLower(f.field.DBName)
		v, _ := e.columnStrategies.LoadOrStore(key, filler{f.strategy, m.schema.Name})
		if other := v.(filler); other.strategy != f.strategy {
			return &FieldError{Model: m.schema.Name, Field: f.field.Name, Err: ErrInvalidTag, Detail: fmt.Sprintf(
				"strategy %s, where model %s fills %s by strategy %s: two strategies make the same IDs within a tick; give every model of the table one strategy (to change it, stop every writer of the old one first)",
				f.strategy, other.model, key, other.strategy)}
		}
	}
	return nil
}
