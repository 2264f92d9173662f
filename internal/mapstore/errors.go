package mapstore

import "strings"

// AlreadyExists reports the error of a CREATE … IF NOT EXISTS that raced
// another process's (PostgreSQL's catalog can refuse the second).
func AlreadyExists(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "duplicate key") || strings.Contains(msg, "already exists")
}

// DuplicateKey reports a primary key conflict, in any of the dialects' words.
func DuplicateKey(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Duplicate entry") || strings.Contains(msg, "duplicate key") || strings.Contains(msg, "UNIQUE constraint failed")
}
