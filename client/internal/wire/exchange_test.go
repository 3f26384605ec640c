package wire

import (
	"context"
	"io"
	"math"
	"net/http"
	"testing"
	"time"
)

type scripted []func() (*http.Response, error)

func (s *scripted) RoundTrip(*http.Request) (*http.Response, error) {
	next := (*s)[0]
	*s = (*s)[1:]
	return next()
}

// The exchange describes the last request of an attempt only: a 400 to
// server/discover followed by a dead connection under initialize must
// read as the dead connection, not as a fatal 400.
func TestExchangeDescribesOnlyTheLastRequest(t *testing.T) {
	dead := io.EOF
	tr := &Tracker{next: &scripted{
		func() (*http.Response, error) {
			return &http.Response{StatusCode: 400, Header: http.Header{"Retry-After": {"3"}}, Body: http.NoBody}, nil
		},
		func() (*http.Response, error) { return nil, dead },
	}}
	ex := NewExchange()
	ctx := ex.Bind(context.Background())
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", http.NoBody)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	if rec := ex.Snapshot(); rec.Status != 0 || rec.RetryAfter != 0 {
		t.Fatalf("after a failed request the exchange still says status %d, Retry-After %v", rec.Status, rec.RetryAfter)
	}
}

// Retry-After is delay-seconds (RFC 9110 10.2.3): a number too large for a
// Duration must not wrap around to a negative pause.
func TestParseRetryAfterOverflow(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "99999999999999999999999"} {
		if got := ParseRetryAfter(v, time.Now()); got != math.MaxInt64 {
			t.Errorf("ParseRetryAfter(%q) = %v, want the longest pause", v, got)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Sat, 21 Nov 2026 12:00:05 GMT": 5 * time.Second,
		"Sat, 21 Nov 2026 11:00:00 GMT": 0,
	} {
		if got := ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}
