// Package policy is the one decision the client makes about every request
// it sends, calls and the requests it makes on its own (probes, initialize,
// the tool listing, the event stream) alike: what a failure means (Classify,
// a Verdict of one Class), and what follows it (Retries.After for a call,
// AfterProbe, AfterRecheck, Probe and ProbeLoss for a session's probes,
// StreamRefused for the event stream). It reads what the wire package recorded
// and acts on nothing itself: the client carries its decisions out.
//
// Every failure it tells apart is listed in FAILURES.md.
package policy
