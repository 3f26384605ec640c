package client

// NewSSE returns a client for an MCP server that speaks the HTTP+SSE
// transport of protocol revision 2024-11-05 (deprecated in 2025-03-26):
// streamURL is the URL of its event stream, often ending in /sse. Like New
// it validates and does no I/O: the stream is opened by the first call (or
// Initialize).
//
// It is the same ResilientClient as New's, with the same methods, options,
// errors, Stats, observer events, State and policy. The stream is the
// session: a stream that ends, is reset, or goes silent (a keepalive ping
// left unanswered within WithKeepAliveTimeout) is a lost session. A new
// stream is opened, its endpoint event awaited, the session initialized
// and its subscriptions and logging level restored; calls whose answers
// were due on the old stream are sent again if they are safe to repeat,
// and end with ErrOutcomeUnknown otherwise; nothing more is POSTed to the
// old endpoint. A POST answered 404, or 400 on a session that has served
// (a restarted server that no longer knows it), is an expired session: one
// new session for every goroutine, and the call sent again. A POST refused
// before it was read (connection refused, 503, 429) did not run, as over
// Streamable HTTP.
//
// The endpoint event must name the stream's origin (scheme, host and
// port): one that names another is refused, logged, and the call fails
// with ErrUnavailable, so that a hostile server cannot send the client's
// calls and credentials elsewhere. Request ids are unique beyond the
// session (a random prefix per session): a gateway that sends every
// client's answers to every stream cannot hand this client another's; an
// answer to an id it did not send is dropped and counted
// (Stats().WrongAnswers). An answer larger than WithMaxResponseBytes is
// read no further: its call fails with ErrResponseTooLarge (with
// ErrOutcomeUnknown: it ran), never sent again, if its id came before the
// limit; else the stream is dropped and the session with it.
//
// Every HTTP option applies as for New: the GET and the POSTs go through
// the same HTTP client, token, headers, cookies and observers. The options
// of NewStdio are refused. See docs/sse.md.
func NewSSE(streamURL string, opts ...Option) (*ResilientClient, error) {
	c, err := New(streamURL, opts...)
	if err != nil {
		return nil, err
	}
	c.sess.spoken.Store(speaksSSE)
	return c, nil
}

// WithSSEFallback makes a client of New fall back to the HTTP+SSE
// transport of protocol 2024-11-05 when the endpoint turns out to speak
// only that: the specification's backwards-compatibility procedure. When
// initialize POSTed to the URL is answered 400, 404 or 405 (mcp-go's
// ErrLegacySSEServer), a GET of the same URL is opened expecting an
// endpoint event; if one comes, the client speaks HTTP+SSE to it from then
// on, as a client of NewSSE does, and logs it. Default off: New's endpoint
// is a Streamable HTTP one, and such an answer is a clear error at once
// (F12). See docs/sse.md for why it is not the default.
func WithSSEFallback() Option {
	return optionFunc(func(o *options) { o.sseFallback = true })
}
