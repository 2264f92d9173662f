package shardid

import (
	"database/sql/driver"
	"fmt"
	"strconv"

	"github.com/shardid/shardid/internal/errs"
)

// ID is a 64-bit shardid primary key. It is stored as BIGINT and written to
// JSON as a quoted decimal string, because JavaScript numbers lose precision
// above 2^53; on input it accepts the string or a plain number.
type ID int64

// String returns the decimal form of id.
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// Value implements driver.Valuer.
func (id ID) Value() (driver.Value, error) { return int64(id), nil }

// Scan implements sql.Scanner; NULL scans as 0.
func (id *ID) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*id = 0
	case int64:
		*id = ID(v)
	case []byte:
		return id.parse(string(v))
	case string:
		return id.parse(v)
	default:
		return fmt.Errorf("shardid: cannot scan %T into ID", src)
	}
	return nil
}

// MarshalJSON implements json.Marshaler: a quoted decimal string.
func (id ID) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 22)
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(id), 10)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler: a quoted decimal string, a plain
// number, or null (0).
func (id *ID) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*id = 0
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return id.parse(s)
}

func (id *ID) parse(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errs.Wrap(err, "%q is not an ID", s)
	}
	*id = ID(v)
	return nil
}
