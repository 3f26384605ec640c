package client

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
// classify as the dead connection, not as a fatal 400.
func TestExchangeDescribesOnlyTheLastRequest(t *testing.T) {
	dead := io.EOF
	tr := &tracker{next: &scripted{
		func() (*http.Response, error) {
			return &http.Response{StatusCode: 400, Header: http.Header{"Retry-After": {"3"}}, Body: http.NoBody}, nil
		},
		func() (*http.Response, error) { return nil, dead },
	}}
	ex := newExchange()
	ctx := ex.context(context.Background())
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", http.NoBody)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	}
	if rec := ex.snapshot(); rec.status != 0 || rec.retryAfter != 0 {
		t.Fatalf("after a failed request the exchange still says status %d, Retry-After %v", rec.status, rec.retryAfter)
	}
	if v := classify(wire(dead), on(true), ex, false); v.class != classUnknown {
		t.Errorf("classified as %v, want outcome unknown", v.class)
	}
}

// Retry-After is delay-seconds (RFC 9110 10.2.3): a number too large for a
// Duration must not wrap around to a negative pause.
func TestParseRetryAfterOverflow(t *testing.T) {
	for _, v := range []string{"9223372036854775807", "99999999999999999999999"} {
		if got := parseRetryAfter(v, time.Now()); got != math.MaxInt64 {
			t.Errorf("parseRetryAfter(%q) = %v, want the longest pause", v, got)
		}
	}
}
