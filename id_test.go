package shardid

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestIDJSON(t *testing.T) {
	type payload struct {
		ID ID `json:"id"`
	}
	const big = ID(506214187877944321) // above 2^53: a float64 would round it
	b, err := json.Marshal(payload{ID: big})
	if err != nil || string(b) != `{"id":"506214187877944321"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	for _, in := range []string{`{"id":"506214187877944321"}`, `{"id":506214187877944321}`} {
		var p payload
		if err := json.Unmarshal([]byte(in), &p); err != nil || p.ID != big {
			t.Fatalf("Unmarshal(%s) = %d, %v", in, p.ID, err)
		}
	}
	p := payload{ID: 5}
	if err := json.Unmarshal([]byte(`{"id":null}`), &p); err != nil || p.ID != 0 {
		t.Fatalf("null: %d, %v", p.ID, err)
	}
	for _, in := range []string{`{"id":"12x"}`, `{"id":1.5}`, `{"id":"99999999999999999999"}`, `{"id":true}`} {
		if err := json.Unmarshal([]byte(in), &p); err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
		}
	}
}

func TestIDSQL(t *testing.T) {
	var id ID
	for _, src := range []any{int64(42), []byte("42"), "42"} {
		id = 0
		if err := id.Scan(src); err != nil || id != 42 {
			t.Fatalf("Scan(%#v) = %d, %v", src, id, err)
		}
	}
	if err := id.Scan(nil); err != nil || id != 0 {
		t.Fatalf("Scan(nil) = %d, %v", id, err)
	}
	if err := id.Scan(3.5); err == nil {
		t.Fatal("Scan(float64) accepted")
	}
	if v, err := ID(7).Value(); err != nil || v != int64(7) {
		t.Fatalf("Value = %#v, %v", v, err)
	}
	if ID(-3).String() != "-3" {
		t.Fatal("String")
	}
	var target *FieldError
	err := error(&FieldError{Model: "M", Field: "F", Err: ErrNoShard, Detail: "d"})
	if !errors.As(err, &target) || !errors.Is(err, ErrNoShard) || err.Error() != "shardid: no shard: M.F: d" {
		t.Fatalf("FieldError: %v", err)
	}
}
