package rig

import (
	"errors"
	"strings"
	"testing"

	"github.com/resilientmcp/resilientmcp/client"
)

// The sentinels a caller branches on. Every error is exactly one of them or
// the server's own error; ErrClosed may come with ErrOutcomeUnknown.
var sentinels = []error{client.ErrOutcomeUnknown, client.ErrUnavailable, client.ErrAuthorizationRequired, client.ErrClosed}

// CheckContract fails unless err is want (nil: the server's own error) and
// none of the other sentinels, and its message says each thing once.
func CheckContract(t *testing.T, err error, want error, method string) {
	t.Helper()
	if err == nil {
		t.Fatal("the call succeeded; the row was not provoked")
	}
	for _, s := range sentinels {
		if is := errors.Is(err, s); is != (s == want) {
			t.Errorf("errors.Is(err, %v) = %v\nerr: %v", s, is, err)
		}
	}
	msg := err.Error()
	if n := strings.Count(msg, "failed to send request"); n > 1 {
		t.Errorf("the message says \"failed to send request\" %d times: %s", n, msg)
	}
	if want != nil && !strings.Contains(msg, method) {
		t.Errorf("the message does not name %s: %s", method, msg)
	}
	t.Logf("caller saw: %v", err)
}
