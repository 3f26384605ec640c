package pool

import "fmt"

// State is where a member stands. The names follow grpc-go's connectivity
// states.
type State int

const (
	Idle         State = iota // no value and no dial under way: before the first Acquire, or after a dial loop ended without one (a permanent dial error, the backoff's Stop)
	Connecting                // a dial loop is under way for a member that never had a value in service
	Ready                     // a value is in service
	Reconnecting              // a dial loop is under way for a member that had a value in service before
	Closed                    // Close was called
)

// String returns the state's name, "Ready" for Ready.
func (s State) String() string {
	switch s {
	case Idle:
		return "Idle"
	case Connecting:
		return "Connecting"
	case Ready:
		return "Ready"
	case Reconnecting:
		return "Reconnecting"
	case Closed:
		return "Closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Stats are the Pool's counters since New: a snapshot, a plain value.
type Stats struct {
	Acquires   uint64 // leases handed out
	Discards   uint64 // generations taken out of service
	Dials      uint64 // dials (calls of Config.Dial)
	DialErrors uint64 // dials that failed
	Ready      int    // members in service now
	Leased     int    // leases out now
}

// Stats returns a snapshot of the counters.
func (p *Pool[T]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	for _, m := range p.members {
		if m.state == Ready {
			s.Ready++
		}
		s.Leased += m.leases
	}
	return s
}
