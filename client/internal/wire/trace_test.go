package wire

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"testing"
)

// An exchange records the connection each request takes, whether the
// context it was bound to carried a trace of its own or not; a caller's
// trace still hears of it too.
func TestExchangeTracesTheConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	rt := Chain{Transport: tr}.Build()
	send := func(ctx context.Context) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if traceKey == nil {
		t.Error("httptrace's context key was not learnt: every call pays a context more")
	}
	for _, callerTrace := range []bool{false, true} {
		tr.CloseIdleConnections()
		ctx := context.Background()
		var callerSaw int
		if callerTrace {
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { callerSaw++ }})
		}
		ex := NewExchange()
		ctx = ex.Bind(ctx)
		for i, reused := range []bool{false, true} {
			ex.Reset()
			send(ctx)
			rec := ex.Snapshot()
			if !rec.GotConn || rec.Reused != reused || !rec.Traced {
				t.Errorf("caller's trace %v, request %d: recorded %+v, want a connection taken, reused %v", callerTrace, i, rec, reused)
			}
		}
		if callerTrace && callerSaw != 2 {
			t.Errorf("the caller's own trace heard of %d connections taken, want 2", callerSaw)
		}
		if got := httptrace.ContextClientTrace(ctx); got == nil {
			t.Error("no trace in the bound context")
		}
	}
}
