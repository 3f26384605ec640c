package policy

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

func TestStreamRefused(t *testing.T) {
	for _, tt := range []struct {
		status       int
		openedBefore bool
		want         StreamRefusal
	}{
		{405, false, StreamAbsent},
		{405, true, StreamAbsent},
		{404, true, StreamSessionExpired},
		{400, true, StreamSessionExpired},
		{404, false, StreamAskSession},
		{400, false, StreamAskSession},
		{500, true, StreamServed},
		{503, false, StreamServed},
		{401, false, StreamServed},
	} {
		if got := StreamRefused(tt.status, tt.openedBefore); got != tt.want {
			t.Errorf("StreamRefused(%d, opened before %v) = %v, want %v", tt.status, tt.openedBefore, got, tt.want)
		}
	}
}

// Every way a session-era event stream's GET can fail, as StreamVerdict
// classifies it and AfterStream decides on it: a 405 stops the loop,
// whether or not the stream worked before (F8); a 404 or 400 renews the
// session if the stream worked (F27) or the probe says the server forgot
// it, and stops if the probe says it knows it; what no retry can fix
// stops; the rest is asked again.
func TestStreamVerdictAndAfterStream(t *testing.T) {
	dial := netErr("dial", syscall.ECONNREFUSED)
	for _, tt := range []struct {
		name  string
		ans   StreamAnswer
		class Class
		next  StreamNext
	}{
		{"F8: 405", StreamAnswer{Status: 405}, ServerError, StreamStop},
		{"405 after the stream worked", StreamAnswer{Status: 405, OpenedBefore: true}, ServerError, StreamStop},
		{"F27: 404 after the stream worked", StreamAnswer{Status: 404, OpenedBefore: true}, Expired, StreamRenew},
		{"F27: 400 after the stream worked", StreamAnswer{Status: 400, OpenedBefore: true}, Expired, StreamRenew},
		{"404 from the start, the probe says expired", StreamAnswer{Status: 404, SessionExpired: true}, Expired, StreamRenew},
		{"404 from the start, the probe says alive", StreamAnswer{Status: 404, SessionAlive: true}, ServerError, StreamStop},
		{"400 from the start, the probe says alive", StreamAnswer{Status: 400, SessionAlive: true}, ServerError, StreamStop},
		{"404 from the start, the probe cannot tell", StreamAnswer{Status: 404}, NotSent, StreamReopen},
		{"401", StreamAnswer{Status: 401}, AuthRequired, StreamStop},
		{"403", StreamAnswer{Status: 403}, AuthRequired, StreamStop},
		{"406", StreamAnswer{Status: 406}, ServerError, StreamStop},
		{"429", StreamAnswer{Status: 429, RetryAfter: time.Second}, NotSent, StreamReopen},
		{"503", StreamAnswer{Status: 503}, NotSent, StreamReopen},
		{"502", StreamAnswer{Status: 502}, OutcomeUnknown, StreamReopen},
		{"500", StreamAnswer{Status: 500}, Broken, StreamReopen},
		{"204", StreamAnswer{Status: 204}, Broken, StreamReopen},
		{"refused connection", StreamAnswer{Err: dial}, NotSent, StreamReopen},
		{"reset", StreamAnswer{Err: netErr("read", syscall.ECONNRESET)}, OutcomeUnknown, StreamReopen},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := StreamVerdict(tt.ans)
			if v.Class != tt.class {
				t.Errorf("class %v, want %v", v.Class, tt.class)
			}
			a := AfterStream(v)
			if a.Next != tt.next {
				t.Errorf("AfterStream = %v (%s), want %v", a.Next, a.Why, tt.next)
			}
			if a.Next == StreamRenew && a.Discard != LossExpired {
				t.Errorf("renewal for %v, want %v", a.Discard, LossExpired)
			}
			if a.Why == "" {
				t.Error("no why")
			}
		})
	}
	if v := StreamVerdict(StreamAnswer{Status: 429, RetryAfter: time.Second}); !v.Busy || v.RetryAfter != time.Second {
		t.Errorf("429 verdict %+v: want busy, with its Retry-After", v)
	}
	if v := StreamVerdict(StreamAnswer{Err: dial}); !v.Unreachable {
		t.Errorf("refused connection verdict %+v: want unreachable", v)
	}
}

// The stateless era's subscriptions/listen, classified by Classify: the
// server's own refusals (no such method, a 404 that in this era is no lost
// session, authorization) stop the loop; a changed protocol version renews
// the session; a server away or in trouble is asked again.
func TestAfterStreamOnSubscriptionsListen(t *testing.T) {
	stateless := Session{}
	for _, tt := range []struct {
		name   string
		err    error
		status int
		want   StreamNext
	}{
		{"method not found", mcp.ErrMethodNotFound, 200, StreamStop},
		{"invalid params (a filter refused)", mcp.ErrInvalidParams, 200, StreamStop},
		{"404 in the stateless era", mcpgo(transport.ErrSessionTerminated), 404, StreamStop},
		{"401", mcpgo(errors.New("request failed with status 401")), 401, StreamStop},
		{"version rejected", mcp.UnsupportedProtocolVersionError{Version: "2026-07-28"}, 400, StreamRenew},
		{"server down", mcpgo(netErr("dial", syscall.ECONNREFUSED)), 0, StreamReopen},
		{"503", mcpgo(errors.New("request failed with status 503")), 503, StreamReopen},
		{"500", mcpgo(errors.New("request failed with status 500")), 500, StreamReopen},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex := seen{Record: wire.Record{Status: tt.status, Started: true, GotConn: tt.status != 0, Traced: true}}
			a := AfterStream(classify(tt.err, stateless, ex, false))
			if a.Next != tt.want {
				t.Errorf("AfterStream = %v (%s), want %v", a.Next, a.Why, tt.want)
			}
		})
	}
	cut := seen{Record: wire.Record{Status: 200, Started: true, GotConn: true, Traced: true}, streamed: true, cut: true}
	if a := AfterStream(classify(mcpgo(errors.New("unexpected EOF")), stateless, cut, false)); a.Next != StreamReopen {
		t.Errorf("a listen stream cut: %v, want %v", a.Next, StreamReopen)
	}
	corrupt := seen{refused: &wire.WrongAnswerError{}}
	if a := AfterStream(classify(mcpgo(errors.New("x")), stateless, corrupt, false)); a.Next != StreamRenew || a.Discard != LossCorrupt {
		t.Errorf("a listen stream answered with another request's id: %v %v, want %v %v", a.Next, a.Discard, StreamRenew, LossCorrupt)
	}
}

// StreamRetries spaces reopenings by the backoff, longer if the server
// asked for it, and stops the loop when the backoff ends; a decision other
// than reopening spends no pause.
func TestStreamRetriesPauses(t *testing.T) {
	const step = 100 * time.Millisecond
	newRetries := func(max uint64) *StreamRetries {
		return &StreamRetries{NewBackOff: func() backoff.BackOff {
			return backoff.WithMaxRetries(backoff.NewConstantBackOff(step), max)
		}}
	}
	busy := StreamEnd{Failed: true, Verdict: StreamVerdict(StreamAnswer{Status: 503, RetryAfter: time.Second})}
	absent := StreamEnd{Failed: true, Verdict: StreamVerdict(StreamAnswer{Status: 405})}
	for _, tt := range []struct {
		name  string
		ends  []StreamEnd
		max   uint64
		next  StreamNext
		pause time.Duration
	}{
		{"a stream that ended", []StreamEnd{{}}, 5, StreamReopen, step},
		{"a busy server's Retry-After", []StreamEnd{busy}, 5, StreamReopen, time.Second},
		{"405 waits for nothing", []StreamEnd{absent}, 5, StreamStop, 0},
		{"the backoff ended", []StreamEnd{{}, {}, {}}, 2, StreamStop, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRetries(tt.max)
			var a StreamAction
			for _, end := range tt.ends {
				a = r.After(end)
			}
			if a.Next != tt.next || a.Pause != tt.pause {
				t.Errorf("After = %v after %v (%s), want %v after %v", a.Next, a.Pause, a.Why, tt.next, tt.pause)
			}
		})
	}
}
