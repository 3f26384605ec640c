package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// FuzzClassify: whatever the status, the error and what the HTTP layer
// saw, classification follows the error contract's fixed points.
func FuzzClassify(f *testing.F) {
	for _, status := range []int{0, 200, 202, 400, 401, 403, 404, 429, 500, 502, 503, 504} {
		f.Add(status, "request failed", uint8(0), true)
	}
	f.Add(200, "", uint8(3), true)
	f.Add(200, "", uint8(4), false)
	f.Fuzz(func(t *testing.T, status int, msg string, kind uint8, sessionEra bool) {
		var cause error = errors.New(msg)
		switch kind % 6 {
		case 1:
			cause = io.ErrUnexpectedEOF
		case 2:
			cause = transport.ErrSessionTerminated
		case 3:
			cause = &wire.WrongAnswerError{Got: "8", Want: "7"}
		case 4:
			cause = fmt.Errorf("%w: over the limit", wire.ErrResponseTooLarge)
		case 5:
			cause = &json.SyntaxError{}
		}
		ex := seen{Record: wire.Record{Status: status, RetryAfter: time.Second}}
		var refused error
		if kind%6 == 3 || kind%6 == 4 {
			ex.refused = cause
			refused = cause
		}
		v := classify(mcpgo(fmt.Errorf("%s: %w", msg, cause)), on(sessionEra), ex, false)
		if v.Class < Caller || v.Class > Rejected {
			t.Fatalf("class %d out of range", v.Class)
		}
		switch {
		case refused != nil:
			if !errors.Is(v.Cause, refused) || !v.MayHaveRun() {
				t.Fatalf("a refused answer classified as %v", v.Class)
			}
		case kind%6 == 2:
			// mcp-go's 404: the status decides nothing more.
		case status == http.StatusUnauthorized, status == http.StatusForbidden:
			if v.Class != AuthRequired {
				t.Fatalf("%d classified as %v", status, v.Class)
			}
		case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable:
			if v.Class != NotSent || v.RetryAfter != time.Second {
				t.Fatalf("%d classified as %v", status, v.Class)
			}
		case status == http.StatusBadGateway, status == http.StatusGatewayTimeout:
			if v.Class != OutcomeUnknown {
				t.Fatalf("%d classified as %v", status, v.Class)
			}
		}
		if v.Class == NotSent && v.MayHaveRun() {
			t.Fatalf("not sent, yet may have run: %+v", v)
		}
	})
}
