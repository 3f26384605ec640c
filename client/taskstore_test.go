package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The file task store keeps what it was given across instances (a process
// restarted), ignores what is not its own in a shared directory, and lets
// a deleted task go, twice without error.
func TestFileTaskStore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := NewFileTaskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().UTC().Truncate(time.Millisecond)
	a := PendingTask{ID: "task/a", Tool: "research", ArgsHash: argsHash(map[string]any{"b": 1, "a": 2}), Created: created, Endpoint: "http://x/mcp"}
	b := PendingTask{ID: "b", Tool: "crunch", Created: created.Add(time.Second), Endpoint: "http://x/mcp"}
	for _, p := range []PendingTask{a, b} {
		if err := s.Put(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Another store's files share the directory (auth's FileStore).
	if err := os.WriteFile(filepath.Join(dir, "0123abcd.json"), []byte(`{"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := NewFileTaskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.List(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	for _, p := range got {
		if p.ID == a.ID && (p != a) || p.ID == b.ID && p != b {
			t.Errorf("stored %+v, read %+v", a, p)
		}
	}
	if err := again.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := again.Delete(ctx, a.ID); err != nil {
		t.Errorf("deleting a task twice: %v", err)
	}
	if got, err := s.List(ctx); err != nil || len(got) != 1 || got[0].ID != "b" {
		t.Errorf("List after Delete = %+v, %v", got, err)
	}
	if argsHash(map[string]any{"a": 2, "b": 1}) != a.ArgsHash {
		t.Error("the arguments hash depends on the order of the keys")
	}
}
