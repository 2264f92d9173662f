package mapstore

import (
	"context"
	"strings"
	"testing"
)

// TestBehind: a live process that follows an older version is behind until
// it notes the newer one, and is forgotten when it stops.
func TestBehind(t *testing.T) {
	s, ctx := openStore(t), context.Background()
	if err := s.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	behind, err := s.Behind(ctx, 2)
	if err != nil || len(behind) != 1 || !strings.HasSuffix(behind[0], "(version 1)") {
		t.Fatalf("Behind(2): %v, %v; want this process at version 1", behind, err)
	}
	if err := s.Seen(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if behind, err := s.Behind(ctx, 2); err != nil || len(behind) != 0 {
		t.Fatalf("Behind(2) after Seen(2): %v, %v", behind, err)
	}
	if err := s.Seen(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx); err != nil {
		t.Fatal(err)
	}
	if behind, err := s.Behind(ctx, 2); err != nil || len(behind) != 0 {
		t.Fatalf("Behind(2) after Forget: %v, %v", behind, err)
	}
}
