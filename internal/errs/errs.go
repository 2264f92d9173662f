// Package errs gives the plugin's errors their context without repeating
// the "shardid: " prefix of the error they wrap.
package errs

import (
	"fmt"
	"strings"
)

const prefix = "shardid: "

// Wrap returns err in the context format says: "shardid: <context>: <err>",
// where err's own prefix is dropped. errors.Is and errors.As see err.
func Wrap(err error, format string, args ...any) error {
	return &wrapped{context: fmt.Sprintf(format, args...), err: err}
}

type wrapped struct {
	context string
	err     error
}

func (w *wrapped) Error() string {
	if w.err == nil {
		return prefix + w.context
	}
	return prefix + w.context + ": " + strings.TrimPrefix(Text(w.err), prefix)
}

func (w *wrapped) Unwrap() error { return w.err }

// Text is err.Error() for an error that may be the application's (a hook's,
// a Valuer's, a callback's, which the plugin reads its text or wraps): one
// whose Error method panics, as a typed nil pointer's that reads its fields
// does, is said as fmt says it ("<nil>"), as GORM's logger and database/sql
// do, and does not crash the statement.
func Text(err error) (text string) {
	defer func() {
		if recover() != nil {
			text = fmt.Sprint(err)
		}
	}()
	return err.Error()
}
