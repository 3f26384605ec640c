package client

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

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
	k := listingKey{method: string(mcp.MethodToolsList)}
	a := StoredListing{Key: storeKey("http://x/mcp", k, ""), Endpoint: "http://x/mcp", Method: k.method, Server: "s 1",
		Fetched: time.Now().UTC().Truncate(time.Millisecond), TTLMs: &ttl, Result: json.RawMessage(`{"tools":[]}`)}
	b := a
	b.Key, b.Principal = storeKey("http://x/mcp", k, "fp"), "fp"
	for _, l := range []StoredListing{a, b} {
		if err := s.Put(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if a.Key == b.Key {
		t.Fatal("a private answer has the public one's key")
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

// Stale reads its own mark, and the same after a JSON round trip; nothing
// else is stale.
func TestStaleMark(t *testing.T) {
	meta := &mcp.Meta{}
	mark(&meta, staleMark{AgeMs: 1500, FetchedAt: time.Now()})
	if age, ok := Stale(meta); !ok || age != 1500*time.Millisecond {
		t.Fatalf("Stale = %v, %v", age, ok)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if age, ok := Stale(mcp.NewMetaFromMap(m)); !ok || age != 1500*time.Millisecond {
		t.Fatalf("Stale after a round trip = %v, %v (%s)", age, ok, raw)
	}
	for _, m := range []*mcp.Meta{nil, {}, {AdditionalFields: map[string]any{StaleMetaKey: "yes"}}} {
		if _, ok := Stale(m); ok {
			t.Errorf("Stale(%+v) = true", m)
		}
	}
}
