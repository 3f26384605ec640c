package client

import "sync/atomic"

// Stats are counters since New, for dashboards and tests.
type Stats struct {
	Calls             uint64 // calls made
	Retries           uint64 // attempts beyond a call's first
	Replays           uint64 // of the retries, those after the session expired
	Reinitializations uint64 // new sessions opened because the server forgot the old one (404)
	Redials           uint64 // new sessions opened because the old one's connection died
	Probes            uint64 // keepalive probes sent
	ProbeFailures     uint64 // keepalive probes that failed
	Sessions          int    // sessions in service now
	InFlight          int    // calls in progress now
	// DroppedNotifications counts notifications dropped because the
	// handlers were more than 1024 behind.
	DroppedNotifications uint64
}

type counters struct {
	calls, retries, replays    atomic.Uint64
	reinitializations, redials atomic.Uint64
	probes, probeFailures      atomic.Uint64
	inFlight                   atomic.Int64
}

// Stats returns a snapshot of the client's counters.
func (c *ResilientClient) Stats() Stats {
	return Stats{
		Calls:             c.stats.calls.Load(),
		Retries:           c.stats.retries.Load(),
		Replays:           c.stats.replays.Load(),
		Reinitializations: c.stats.reinitializations.Load(),
		Redials:           c.stats.redials.Load(),
		Probes:            c.stats.probes.Load(),
		ProbeFailures:     c.stats.probeFailures.Load(),
		Sessions:          c.pool.Stats().Ready,
		InFlight:          int(c.stats.inFlight.Load()),

		DroppedNotifications: c.notifications.dropped.Load(),
	}
}
