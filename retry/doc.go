// Package retry decides when and how to try again.
//
// It holds two small, independent mechanisms:
//
//   - [DefaultBackOff]: the pause between attempts to get a session again
//     (the pool's reconnect loop) and between a call's retries.
//   - [Budget]: a retry budget shared by every goroutine of a client (or
//     by several clients, given one through client.WithRetryBudget), so
//     that an outage cannot turn into a retry storm (Finagle's RetryBudget).
//
// The loop that gets a session again lives with what it refills: the pool
// package runs it per member, one replacement per generation however many
// goroutines saw the member fail, paced by a BackOff from here. This
// package does not run loops; it is the pacing they share.
//
// The package knows nothing of MCP, HTTP or pools.
package retry
