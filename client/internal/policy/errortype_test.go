package policy

import (
	"context"
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/autherr"
)

// The observers' error type is the verdict's class, named: what Classify
// decided, never a second reading of the error. A 404 is a lost session in
// the session era and the server's answer in the stateless era, for the
// observers as for the call.
func TestErrorTypeIsTheVerdicts(t *testing.T) {
	rec := func(status int) seen {
		return seen{Record: wire.Record{Status: status, Started: true, GotConn: true, Traced: true, WithSession: true}}
	}
	served := Session{SessionEra: true, Served: true}
	tooLarge := seen{refused: wire.ErrResponseTooLarge}
	wrong := seen{refused: &wire.WrongAnswerError{}}
	for _, tt := range []struct {
		name     string
		err      error
		s        Session
		ex       seen
		ctxErr   error
		want     string
		wantCode int
	}{
		{"404 in the session era", mcpgo(transport.ErrSessionTerminated), served, rec(404), nil, TypeSessionExpired, 0},
		{"404 in the stateless era", mcpgo(transport.ErrSessionTerminated), Session{}, rec(404), nil, TypeServerError, 0},
		{"a 4xx", mcpgo(errors.New("request failed with status 422")), served, rec(422), nil, TypeServerError, 0},
		{"a JSON-RPC error", mcp.ErrInvalidParams, served, rec(200), nil, "-32602", mcp.INVALID_PARAMS},
		{"a JSON-RPC error mcp-go keeps no code of", errors.New("tool exploded"), served, rec(200), nil, TypeServerError, 0},
		{"version rejected", mcp.UnsupportedProtocolVersionError{Version: "x"}, served, rec(400), nil, strconv.Itoa(mcp.UNSUPPORTED_PROTOCOL_VERSION), mcp.UNSUPPORTED_PROTOCOL_VERSION},
		{"deadline", mcpgo(os.ErrDeadlineExceeded), served, rec(0), context.DeadlineExceeded, TypeDeadlineExceeded, 0},
		{"cancelled", mcpgo(errors.New("unexpected nil response")), served, rec(0), context.Canceled, TypeCanceled, 0},
		{"401", mcpgo(errors.New("request failed with status 401")), served, rec(401), nil, TypeUnauthorized, 0},
		{"insufficient scope", &autherr.InsufficientScopeError{}, served, rec(403), nil, TypeInsufficientScope, 0},
		{"503", mcpgo(errors.New("request failed with status 503")), served, rec(503), nil, TypeServerBusy, 0},
		{"refused connection", mcpgo(netErr("dial", syscall.ECONNREFUSED)), served, seen{}, nil, TypeConnectionError, 0},
		{"reset after sending", mcpgo(netErr("read", syscall.ECONNRESET)), served, rec(0), nil, TypeConnectionError, 0},
		{"502", mcpgo(errors.New("request failed with status 502")), served, rec(502), nil, TypeConnectionError, 0},
		{"500", mcpgo(errors.New("request failed with status 500")), served, rec(500), nil, TypeBrokenAnswer, 0},
		{"another request's answer", mcpgo(errors.New("x")), served, wrong, nil, TypeWrongAnswer, 0},
		{"too large", mcpgo(errors.New("x")), served, tooLarge, nil, TypeResponseTooLarge, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := classify(tt.err, tt.s, tt.ex, tt.ctxErr != nil)
			got, code := ErrorType(v, tt.err, tt.ctxErr)
			if got != tt.want || code != tt.wantCode {
				t.Errorf("ErrorType of %v (%v) = %q, %d; want %q, %d", tt.err, v.Class, got, code, tt.want, tt.wantCode)
			}
		})
	}
}

func TestResentErrorType(t *testing.T) {
	if got := ResentErrorType(401); got != TypeUnauthorized {
		t.Errorf("401: %q", got)
	}
	if got := ResentErrorType(403); got != TypeInsufficientScope {
		t.Errorf("403: %q", got)
	}
}
