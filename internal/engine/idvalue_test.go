package engine

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

type (
	namedID    int64
	namedText  string
	panicValue struct{}
	// valuerID binds as shardid.ID does.
	valuerID int64
)

func (id valuerID) Value() (driver.Value, error) { return int64(id), nil }

func (*panicValue) Value() (any, error) { panic("boom") }

// Condition values are read as database/sql binds them.
func TestConditionValueReading(t *testing.T) {
	id := int64(42)
	var nilID *valuerID
	for name, c := range map[string]struct {
		v    any
		want int64
		err  error // nil: no error; errNull; or any other error (ErrNoShard wraps it)
	}{
		"int64":                {v: id, want: 42},
		"a pointer":            {v: &id, want: 42},
		"a named type":         {v: namedID(42), want: 42},
		"an ID":                {v: valuerID(42), want: 42},
		"a nil *ID":            {v: nilID, err: errNull},
		"nil":                  {v: nil, err: errNull},
		"sql.NullInt64":        {v: sql.NullInt64{Int64: 42, Valid: true}, want: 42},
		"a NULL sql.NullInt64": {v: sql.NullInt64{}, err: errNull},
		"text":                 {v: "42", want: 42},
		"bytes":                {v: []byte("42"), want: 42},
		"a float":              {v: 42.0, err: errors.New("any")},
		"a bool":               {v: true, err: errors.New("any")},
		"a uint64 above 2^63":  {v: uint64(1 << 63), err: errors.New("any")},
		"a panicking Valuer":   {v: &panicValue{}, err: errors.New("any")},
	} {
		got, err := int64Of(c.v)
		switch {
		case c.err == nil && (err != nil || got != c.want):
			t.Errorf("%s: %d, %v; want %d", name, got, err, c.want)
		case errors.Is(c.err, errNull) && !errors.Is(err, errNull):
			t.Errorf("%s: %v, want errNull", name, err)
		case c.err != nil && err == nil:
			t.Errorf("%s: read %d, want an error", name, got)
		}
	}
	text := "Dan"
	u := uuid.New()
	for name, c := range map[string]struct {
		v    any
		t    reflect.Type
		want any
	}{
		"a *string":            {&text, reflect.TypeOf(""), "Dan"},
		"a named string":       {namedText("Dan"), reflect.TypeOf(""), "Dan"},
		"bytes for text":       {[]byte("Dan"), reflect.TypeOf(""), "Dan"},
		"a uuid":               {u, reflect.TypeOf(uuid.UUID{}), u},
		"a *uuid":              {&u, reflect.TypeOf(uuid.UUID{}), u},
		"a uuid's text":        {u.String(), reflect.TypeOf(uuid.UUID{}), u},
		"an int for an int":    {namedID(7), reflect.TypeOf(int64(0)), int64(7)},
		"text for an unsigned": {"7", reflect.TypeOf(uint64(0)), uint64(7)},
		"text for bytes":       {"ab", reflect.TypeOf([]byte(nil)), []byte("ab")},
	} {
		got, err := asKind(c.v, c.t)
		if err != nil || !reflect.DeepEqual(got.Convert(c.t).Interface(), reflect.ValueOf(c.want).Convert(c.t).Interface()) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, c.want)
		}
	}
	if _, err := asKind(42, reflect.TypeOf("")); err == nil {
		t.Error("a number for a text key was read")
	}
	if _, err := asKind((*string)(nil), reflect.TypeOf("")); !errors.Is(err, errNull) {
		t.Errorf("a nil *string: %v, want errNull", err)
	}
}

// TestByteaInputIsReadAsPostgresReadsIt: text bound to a bytea is read by
// PostgreSQL's byteain, in the hex or the escape format; a []byte hash key
// given so is hashed as the bytes it compares.
func TestByteaInputIsReadAsPostgresReadsIt(t *testing.T) {
	for text, want := range map[string]string{
		"ab":            "ab",
		`\x6162`:        "ab",
		`\x61 62`:       "ab",
		"\\x61\t\n62\r": "ab",
		`\x`:            "",
		`\141b`:         "ab",
		`a\\b`:          `a\b`,
		`\000\377`:      "\x00\xff",
		"caf\xc3\xa9":   "caf\xc3\xa9",
		`\X6162`:        "",
		`\x616`:         "",
		`\x6 162`:       "",
		`\x61\v62`:      "",
		`a\b`:           "",
		`\400`:          "",
		`\14`:           "",
		`a\`:            "",
	} {
		got, err := byteaInput([]byte(text))
		switch {
		case want == "" && text != `\x`:
			if err == nil {
				t.Errorf("byteaInput(%q) = %q, want an error (PostgreSQL refuses it)", text, got.Bytes())
			}
		case err != nil || string(got.Bytes()) != want:
			t.Errorf("byteaInput(%q) = %v, %v; want %q", text, got, err, want)
		}
	}
	for v, want := range map[any]bool{"x": true, sql.NullString{String: "x", Valid: true}: true, namedText("x"): true, 42: false} {
		if got := boundAsText(v); got != want {
			t.Errorf("boundAsText(%#v) = %v, want %v", v, got, want)
		}
	}
	if boundAsText([]byte("x")) {
		t.Error("boundAsText([]byte) = true")
	}
}
