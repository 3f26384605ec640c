// Package sse_test holds client.NewSSE, the HTTP+SSE transport of protocol
// 2024-11-05, to servers nobody here wrote (server-everything's SSE mode,
// mcp-go's SSE server, go-sdk's SSE handler), each run as a process that
// is SIGKILLed and started again on the same port, and to a fault proxy
// that cuts, silences and resets its streams.
package sse_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("SSESERVER_KIND") != "" {
		// A server process: no leak check, it is killed.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
