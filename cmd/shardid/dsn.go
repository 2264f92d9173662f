package main

import (
	"fmt"

	"github.com/shardid/shardid/internal/dsn"
)

// redactDSN returns dsn with its password, if it has one, hidden.
func redactDSN(d string) string { return dsn.Redact(d) }

// dsnError names the flag and the DSN, password hidden, that err came from;
// a driver's error that prints the DSN has it hidden there too.
func dsnError(flag, given string, err error) error {
	return fmt.Errorf("%s %s: %w", flag, redactDSN(given), dsn.RedactError(err, given))
}
