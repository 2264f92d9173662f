package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// jsonFlagHelp is the --json flag's help; each command's long help lists
// the fields.
const jsonFlagHelp = "print the result as JSON (fields in --help) instead of text"

// printJSON writes v as indented JSON, one value and a newline.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// plural writes n with its noun, singular for one.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
