package fence

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// ShardSQL returns the SQL expression of a row's logical shard read from t's
// key column, qualified by qualifier ("" for none, "NEW", "OLD", an alias),
// for the WHERE clauses of the copy and for the triggers.
func (f Fence) ShardSQL(t Table, qualifier string) (string, error) {
	if _, err := f.dialect(); err != nil {
		return "", err
	}
	if err := checkTable(t); err != nil {
		return "", err
	}
	column := quoteIdent(f.Dialect, t.Key)
	if qualifier != "" {
		column = qualifier + "." + column
	}
	mask := 1<<f.ShardBits - 1
	if t.Kind == KeyInt64 {
		return fmt.Sprintf("((%s >> %d) & %d)", column, f.SequenceBits, mask), nil
	}
	// ShardBits <= 16, so the last four hex digits of the text hold the shard.
	switch f.Dialect {
	case "mysql":
		return fmt.Sprintf("(CAST(CONV(RIGHT(%s, 4), 16, 10) AS UNSIGNED) & %d)", column, mask), nil
	case "postgres":
		return fmt.Sprintf("((('x' || right(%s::text, 4))::bit(16)::int) & %d)", column, mask), nil
	}
	// SQLite has no hex conversion: each digit is its place in the hex alphabet.
	digits := (f.ShardBits + 3) / 4
	parts := make([]string, digits)
	for i := range digits {
		parts[i] = fmt.Sprintf("((instr('0123456789abcdef', lower(substr(%s, %d, 1))) - 1) << %d)", column, -1-i, 4*i)
	}
	return fmt.Sprintf("((%s) & %d)", strings.Join(parts, " | "), mask), nil
}

// quoteIdent quotes name as an identifier of dialect.
func quoteIdent(dialect, name string) string {
	if dialect == "mysql" {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteString quotes s as a string literal; MySQL also reads backslashes.
func quoteString(dialect, s string) string {
	s = strings.ReplaceAll(s, "'", "''")
	if dialect == "mysql" {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + s + "'"
}

// triggerName is shardid_fence_<table>_<op>, the table part cut and hashed
// when the whole exceeds the dialect's identifier limit.
func triggerName(dialect, table, op string) string {
	name := "shardid_fence_" + table + "_" + op
	limit := map[string]int{"mysql": 64, "postgres": 63}[dialect]
	if limit == 0 || len(name) <= limit {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(table))
	suffix := fmt.Sprintf("_%08x_%s", h.Sum32(), op)
	keep := limit - len("shardid_fence_") - len(suffix)
	cut := table
	for len(cut) > keep { // cut whole runes: the name must stay valid UTF-8
		r := []rune(cut)
		cut = string(r[:len(r)-1])
	}
	return "shardid_fence_" + cut + suffix
}

// ops are the three triggers of a table, with the row images each checks.
var ops = []struct{ name, event string }{
	{"ins", "INSERT"},
	{"upd", "UPDATE"},
	{"del", "DELETE"},
}

// RangesSQL is an SQL condition: t's key, qualified by qualifier, holds a
// logical shard within one of ranges (false for none). An int64 key is
// masked in place and compared with the range's lowest and highest keys,
// one test fewer per row than shifting it (and one where a range starts
// at 0 or ends at the last shard); other keys go through ShardSQL.
func (f Fence) RangesSQL(t Table, qualifier string, ranges []Range) (string, error) {
	if t.Kind != KeyInt64 {
		shard, err := f.ShardSQL(t, qualifier)
		if err != nil {
			return "", err
		}
		return InRanges(shard, ranges), nil
	}
	if _, err := f.dialect(); err != nil {
		return "", err
	}
	if err := checkTable(t); err != nil {
		return "", err
	}
	if len(ranges) == 0 {
		return "1 = 0", nil
	}
	if len(ranges) > orGroup {
		shard, _ := f.ShardSQL(t, qualifier) // checked above
		return InRanges(shard, ranges), nil
	}
	column := quoteIdent(f.Dialect, t.Key)
	if qualifier != "" {
		column = qualifier + "." + column
	}
	last := 1<<f.ShardBits - 1
	field := fmt.Sprintf("(%s & %d)", column, int64(last)<<f.SequenceBits)
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		lo, hi := int64(r.From)<<f.SequenceBits, int64(r.To+1)<<f.SequenceBits-1
		switch {
		case r.From == 0 && r.To >= last:
			parts[i] = "1 = 1"
		case r.From == 0:
			parts[i] = fmt.Sprintf("%s <= %d", field, hi)
		case r.To >= last:
			parts[i] = fmt.Sprintf("%s >= %d", field, lo)
		default:
			parts[i] = fmt.Sprintf("%s BETWEEN %d AND %d", field, lo, hi)
		}
	}
	return strings.Join(parts, " OR "), nil
}

// InRanges is an SQL condition: the shard expression shard (of ShardSQL) is
// within one of ranges; false for none.
func InRanges(shard string, ranges []Range) string {
	if len(ranges) == 0 {
		return "1 = 0"
	}
	if len(ranges) > orGroup {
		// Narrow ranges' shards in one IN list, which every dialect looks a
		// row up in (as many tests of a row as ranges would cost a scan
		// their product); wide ones stay BETWEEN, or a few ranges of many
		// shards would list them all.
		var in strings.Builder
		var wide []string
		for _, r := range ranges {
			if r.To-r.From >= listedWidth {
				wide = append(wide, shard+" BETWEEN "+strconv.Itoa(r.From)+" AND "+strconv.Itoa(r.To))
				continue
			}
			for s := r.From; s <= r.To; s++ {
				if in.Len() > 0 {
					in.WriteString(", ")
				}
				in.WriteString(strconv.Itoa(s))
			}
		}
		if in.Len() > 0 {
			wide = append(wide, shard+" IN ("+in.String()+")")
		}
		return anyOf(wide)
	}
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = shard + " BETWEEN " + strconv.Itoa(r.From) + " AND " + strconv.Itoa(r.To)
	}
	return strings.Join(parts, " OR ")
}

// listedWidth is the width from which a range is tested as a range, not
// listed shard by shard, among more than orGroup.
const listedWidth = 16

// anyOf ORs conds, in parenthesised groups of at most orGroup (and groups
// of groups) when there are more: SQLite refuses an OR chain over 1,000 deep.
func anyOf(conds []string) string {
	for len(conds) > orGroup {
		groups := make([]string, 0, (len(conds)+orGroup-1)/orGroup)
		for g := range slices.Chunk(conds, orGroup) {
			groups = append(groups, "("+strings.Join(g, " OR ")+")")
		}
		conds = groups
	}
	return strings.Join(conds, " OR ")
}

// orGroup is how many ranges a condition tests one by one, ORed: among
// more, the narrow ones' shards become one IN list (SQLite also refuses an
// OR chain over 1,000 deep).
const orGroup = 64
