package origin

import (
	"net/url"
	"testing"
)

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"http://127.0.0.1:80/mcp", "http://127.0.0.1/other", true},
		{"HTTPS://Example.com/x", "https://example.com:443/y", true},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8081/mcp", false},
		{"http://example.com/mcp", "https://example.com/mcp", false},
		{"http://a.example.com/", "http://b.example.com/", false},
		{"http://[::1]:80/mcp", "http://[::1]/mcp", true},
		{"http://example.com/mcp", "http://sub.example.com/mcp", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := Same(a, b); got != tc.want {
			t.Errorf("Same(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}
