package wire

import (
	"context"
	"io"
	"math"
	"net/http"
	"testing"
	"time"
	"unsafe"
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

// TestExchangeSize: every call allocates its Exchange inside its
// callState (client/call.go), with a pool.Lease of 40 bytes; with the
// allocator's 8-byte header on an object this large, the two must fit the
// 896-byte size class, past which every call allocates 128 bytes more
// (BenchmarkClientCPU's B/call). A field added here may need room made.
func TestExchangeSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the sizes are a 64-bit platform's")
	}
	const sizeClass, header, lease = 896, 8, 40
	if n := unsafe.Sizeof(Exchange{}); n+lease+header > sizeClass {
		t.Errorf("an Exchange is %d bytes: with a lease (%d) and the allocator's header (%d), a call's state is past the %d-byte size class", n, lease, header, sizeClass)
	}
}
