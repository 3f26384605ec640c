package pool

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestRetireIdlesAMemberUntilTheNextAcquire(t *testing.T) {
	d := &dialer{}
	var released atomic.Int32
	p := newPool(1, d, func(c *Config[*conn]) { c.Release = func(*conn) { released.Add(1) } })
	defer p.Close()
	ctx := context.Background()
	l, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Value()
	if p.Retire(first) {
		t.Fatal("retired a value with a lease out")
	}
	l.Release()
	if !p.Retire(first) {
		t.Fatal("Retire: false for an unleased value in service")
	}
	if p.Retire(first) {
		t.Fatal("retired twice")
	}
	if vs := p.Values(); len(vs) != 0 {
		t.Fatalf("values in service after Retire: %v", vs)
	}
	if n := d.count(); n != 1 {
		t.Fatalf("%d dials after Retire; want none beyond the first", n)
	}
	l, err = p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.Value() == first || d.count() != 2 {
		t.Fatalf("the next Acquire got %v after %d dials; want a new value, dialled once", l.Value(), d.count())
	}
	p.Close()
	if released.Load() < 1 {
		t.Fatal("the retired value was not released")
	}
}
