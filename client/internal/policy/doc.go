// Package policy is every decision the client makes about the requests it
// sends, calls and the requests it makes on its own (probes, initialize,
// the tool listing, the notification streams) alike, each in one place:
//
//   - what a failure means: Classify, a Verdict of one Class (StreamVerdict
//     for the session era's event stream, a GET mcp-go does not send);
//   - what a call does after a failed attempt (resend, replay if safe, wait
//     for a new session, pause, give up): Retries.After; after a failed
//     probe of the session it was about to be sent on: Retries.AfterProbe;
//     whether a call Close interrupted may have run: Retries.AfterClose;
//   - whether a failed dial is tried again (Verdict.Permanent), and
//     whether an error is the server's own answer (AnsweredByServer);
//   - whether a listing whose session was replaced under it starts over or
//     gives up: AfterListingRestart;
//   - what follows a refusal of the protocol version a request declared
//     (-32022): VersionRefused, StatelessEraRefusal;
//   - what follows a tools/call refused for its headers (-32020):
//     ParamHeadersRefused;
//   - what a session's probe says of it (Probe, RetryProbe, ProbeLoss), and
//     what the reconnect loop does with a session it kept while the server
//     was away (AfterRecheck); why a session goes and how (Loss);
//   - what follows the end of a notification stream (reopen after a pause,
//     renew the session, or stop): AfterStream and StreamRetries.After,
//     with StreamRefused for what a refused event stream says of its
//     session;
//   - what a call's options change (client.WithCallOptions): whether a call
//     that may have run is replayed, the annotations or the caller
//     (SafeToRepeat, Repeat); whether a call without a session waits for
//     one or fails fast (WhileNoSession);
//   - what counts towards the circuit breaker (Verdict.Outage: the server
//     unreachable or failing with 5xx, not a pooled connection closed while
//     idle), and when it is open (BreakerOpen);
//   - what the observers are told a failure was: ErrorType, the verdict's
//     class named;
//   - when a stdio server's process is crash-looping, and when its next
//     start may be made: Restarts.
//
// It reads what the wire package recorded and acts on nothing itself: the
// client carries its decisions out.
//
// Every failure it tells apart is listed in FAILURES.md.
package policy
