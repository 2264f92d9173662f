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
	return prefix + w.context + ": " + strings.TrimPrefix(w.err.Error(), prefix)
}

func (w *wrapped) Unwrap() error { return w.err }
