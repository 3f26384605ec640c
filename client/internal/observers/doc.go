// Package observers is the room of the client's books: the fan-out to the
// WithObserver observers (Set), each call as they follow it (Trace), their
// layer in the HTTP chain (Outgoing: _meta for the MetaPropagators), and
// the counters Stats reads (Counters). Their types are client/observe's.
//
// It knows nothing of the client: what it needs of a session it asks
// through Session, and the class of the client's own errors (ErrClosed,
// ErrOutcomeUnknown...) it is given, by the function given to New and by
// the caller of Counters.Record.
package observers
