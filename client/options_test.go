package client

import (
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

func TestNewRejectsBadInput(t *testing.T) {
	for _, endpoint := range []string{"", "127.0.0.1:8080/mcp", "ftp://host/mcp", "http:///mcp", "http://[::1"} {
		if c, err := New(endpoint); err == nil {
			c.Close()
			t.Errorf("New(%q) succeeded", endpoint)
		}
	}
	for name, opt := range map[string]Option{
		"negative keepalive": WithKeepAlive(-time.Second),
		"zero attempts":      WithMaxAttempts(0),
		"zero pool":          WithPoolSize(0),
		"zero call timeout":  WithCallTimeout(0),
		"nil backoff":        WithBackOff(nil),
		"nil retry budget":   WithRetryBudget(nil),
		"nil http client":    WithHTTPClient(nil),
		"zero threshold":     WithKeepAliveFailureThreshold(0),
	} {
		if c, err := New("http://127.0.0.1:1/mcp", opt); err == nil {
			c.Close()
			t.Errorf("New with %s succeeded", name)
		}
	}
}

func TestWithMaxResponseBytes(t *testing.T) {
	for _, n := range []int64{0, -1} {
		if c, err := New("http://127.0.0.1:1/mcp", WithMaxResponseBytes(n)); err == nil {
			c.Close()
			t.Errorf("WithMaxResponseBytes(%d) accepted", n)
		}
	}
	c, err := New("http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.httpClient.Transport.(*wire.Tracker).Limit; got != 16<<20 {
		t.Errorf("default limit %d, want 16 MiB", got)
	}
}
