package engine

import (
	"strings"
	"testing"
)

func TestParseTag(t *testing.T) {
	cases := []struct {
		tag  string
		want fieldTag
		err  string
	}{
		{tag: "", want: fieldTag{}},
		{tag: "strategy:snowflake", want: fieldTag{strategy: "snowflake"}},
		{tag: " strategy : instagram ; colocate : UserID ", want: fieldTag{strategy: "instagram", colocate: "UserID"}},
		{tag: "hash:Email;", want: fieldTag{hash: "Email"}},
		{tag: "strategy:uuidv9", err: `unknown strategy "uuidv9" (allowed: instagram, snowflake, segment, ticket, uuidv7, uuidv4)`},
		{tag: "hash:Email;collation:loose", want: fieldTag{hash: "Email", loose: true}},
		{tag: "hash:Email;collation:exact", want: fieldTag{hash: "Email"}},
		{tag: "hash:Email;collation:ci", err: `unknown collation "ci" (allowed: exact, loose)`},
		{tag: "collation:loose", err: "it needs hash"},
		{tag: "shard:3", err: `unknown key "shard" (allowed: strategy, colocate, hash, collation)`},
		{tag: "colocate", err: "is not key:value"},
		{tag: "colocate:", err: "is not key:value"},
		{tag: "hash:A;hash:B", err: "appears twice"},
		{tag: "colocate:UserID;hash:Email", err: "use one"},
	}
	for _, c := range cases {
		got, err := parseTag(c.tag)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("parseTag(%q) = %v, want error containing %q", c.tag, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseTag(%q) = %+v, %v; want %+v", c.tag, got, err, c.want)
		}
	}
}

func FuzzParseTag(f *testing.F) {
	for _, seed := range []string{"", "strategy:snowflake", "colocate:A;hash:B", "a:b:c", ";;", "strategy:", "\x00:\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		got, err := parseTag(tag)
		if err != nil {
			return
		}
		if got.colocate != "" && got.hash != "" {
			t.Fatalf("%q: accepted colocate and hash together", tag)
		}
		if got.strategy != "" && got.strategy != "instagram" && got.strategy != "snowflake" {
			t.Fatalf("%q: accepted strategy %q", tag, got.strategy)
		}
	})
}
