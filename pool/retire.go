package pool

// Retire takes v out of service without a replacement, if a member holds
// it now with no lease out: the member goes Idle, v is released, and the
// member is dialled again by the next Acquire that finds no member ready.
// It is for values that cost something while unused (a server process
// stopped after idle), and reports whether v was retired.
func (p *Pool[T]) Retire(v T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, m := range p.members {
		if m.state != Ready || m.val != v || m.leases > 0 {
			continue
		}
		var zero T
		m.val = zero
		p.setStateLocked(m, Idle)
		p.goRelease(v)
		return true
	}
	return false
}
