// Package reconnect decides when and how to try again.
//
// It holds two small, independent mechanisms:
//
//   - [DefaultBackOff]: the pause between reconnect attempts.
//   - [Budget]: a retry budget shared by every goroutine of a client, so that
//     an outage cannot turn into a retry storm (Finagle's RetryBudget).
//
// One reconnect per generation, however many goroutines saw it fail, is the
// pool package's business: each of its members has generations.
//
// The package knows nothing of MCP, HTTP or pools.
package reconnect
