package listings

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A private answer's store key is not the public one's. (The file listing
// store's tests are in client/store.)
func TestStoreKey(t *testing.T) {
	k := key{method: string(mcp.MethodToolsList)}
	if storeKey("http://x/mcp", k, "") == storeKey("http://x/mcp", k, "fp") {
		t.Fatal("a private answer has the public one's key")
	}
}

// StaleAge (client.Stale) reads its own mark, and the same after a JSON round trip; nothing
// else is stale.
func TestStaleMark(t *testing.T) {
	meta := &mcp.Meta{}
	mark(&meta, staleMark{AgeMs: 1500, FetchedAt: time.Now()})
	if age, ok := StaleAge(meta); !ok || age != 1500*time.Millisecond {
		t.Fatalf("StaleAge = %v, %v", age, ok)
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if age, ok := StaleAge(mcp.NewMetaFromMap(m)); !ok || age != 1500*time.Millisecond {
		t.Fatalf("StaleAge after a round trip = %v, %v (%s)", age, ok, raw)
	}
	for _, m := range []*mcp.Meta{nil, {}, {AdditionalFields: map[string]any{StaleMetaKey: "yes"}}} {
		if _, ok := StaleAge(m); ok {
			t.Errorf("StaleAge(%+v) = true", m)
		}
	}
}
