package wire

import (
	"bytes"
	"net/http"
	"testing"
)

// net/http gets no GetBody on a request HTTP/2 may carry, and keeps it on
// one only HTTP/1 can (where it resends only what it never wrote), while
// the caller's request keeps it for http.Client's redirects.
func TestWithoutResend(t *testing.T) {
	for _, tt := range []struct {
		url     string
		h2c     bool
		getBody bool
	}{
		{"https://127.0.0.1/mcp", false, false},
		{"http://127.0.0.1/mcp", false, true},
		{"http://127.0.0.1/mcp", true, false},
	} {
		req, err := http.NewRequest(http.MethodPost, tt.url, bytes.NewReader([]byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		out := withoutResend(req, tt.h2c)
		if got := out.GetBody != nil; got != tt.getBody {
			t.Errorf("%s (h2c %v): GetBody kept = %v, want %v", tt.url, tt.h2c, got, tt.getBody)
		}
		if req.GetBody == nil {
			t.Errorf("%s: the caller's request lost its GetBody", tt.url)
		}
	}
}
