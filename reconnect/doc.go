// Package reconnect decides when and how to try again.
//
// It holds three small, independent mechanisms:
//
//   - [DefaultBackOff]: the pause between reconnect attempts.
//   - [Budget]: a token bucket shared by every goroutine of a client, so that an
//     outage cannot turn into a retry storm (Finagle's RetryBudget).
//   - [Slot]: one live value (a connection, a session) per generation. The
//     first caller that reports generation N broken starts the move to N+1 in
//     the background; every other caller waits for it instead of starting its
//     own. However many goroutines saw the failure, there is one reconnect.
//
// The package knows nothing of MCP, HTTP or pools.
package reconnect
