package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
	a := PendingTask{ID: "task/a", Tool: "research", ArgsHash: "4a5b", Created: created, Endpoint: "http://x/mcp"}
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
}

// The file listing store keeps what it is given across instances, shares
// its directory with the other stores, and says which file is not its own
// kind.
func TestFileListingStore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := NewFileListingStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	ttl := int64(60000)
	a := StoredListing{Key: "k-public", Endpoint: "http://x/mcp", Method: "tools/list", Server: "s 1",
		Fetched: time.Now().UTC().Truncate(time.Millisecond), TTLMs: &ttl, Result: json.RawMessage(`{"tools":[]}`)}
	b := a
	b.Key, b.Principal = "k-private", "fp"
	for _, l := range []StoredListing{a, b} {
		if err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	// A task store and auth's FileStore may share the directory.
	if err := os.WriteFile(filepath.Join(dir, "task-0123.json"), []byte(`{"id":"t"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := NewFileListingStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := again.List(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	for _, l := range got {
		want := a
		if l.Key == b.Key {
			want = b
		}
		if l.Principal != want.Principal || l.Server != want.Server || !l.Fetched.Equal(want.Fetched) || *l.TTLMs != ttl || string(l.Result) != string(want.Result) {
			t.Errorf("stored %+v, read %+v", want, l)
		}
	}
	if err := again.Delete(ctx, a.Key); err != nil {
		t.Fatal(err)
	}
	if err := again.Delete(ctx, a.Key); err != nil {
		t.Errorf("deleting twice: %v", err)
	}
	if got, err := s.List(ctx); err != nil || len(got) != 1 || got[0].Key != b.Key {
		t.Errorf("List after Delete = %+v, %v", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, fileListingPrefix+"bad.json"), []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Error("a corrupt listing file was read without an error")
	}
}
