package deadline

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestSharedDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(160 * time.Second) // slack 10s
		start := time.Now()

		var first [deadlineShards]context.Context
		for i := range first {
			first[i] = d.getOf(i)
			deadline, ok := first[i].Deadline()
			if !ok || deadline.Before(start.Add(160*time.Second)) || deadline.After(start.Add(170*time.Second)) {
				t.Fatalf("deadline %v from now, want between 160s and 170s", deadline.Sub(start))
			}
		}
		a := first[0]
		deadline, _ := a.Deadline()
		time.Sleep(9 * time.Second)
		for i := range first {
			if d.getOf(i) != first[i] {
				t.Fatal("a call within the slack got a context of its own")
			}
		}
		for range 100 {
			if c := d.Get(); !slices.Contains(first[:], c) {
				t.Fatal("a call within the slack got a context of its own")
			}
		}
		time.Sleep(2 * time.Second)
		b := d.getOf(0)
		if b == a {
			t.Fatal("a call 11s later shares a deadline that is less than the timeout away")
		}
		if bd, _ := b.Deadline(); time.Until(bd) < 160*time.Second {
			t.Fatalf("new deadline only %v away", time.Until(bd))
		}

		time.Sleep(time.Until(deadline))
		synctest.Wait()
		if !errors.Is(a.Err(), context.DeadlineExceeded) {
			t.Fatalf("at its deadline the shared context says %v", a.Err())
		}
		if b.Err() != nil {
			t.Fatalf("the later context ended with the earlier one: %v", b.Err())
		}
		d.Close()
		if !errors.Is(b.Err(), context.Canceled) {
			t.Fatalf("after close the shared context says %v", b.Err())
		}
		time.Sleep(time.Minute)
		for i := range first {
			if c := d.getOf(i); c == b || !errors.Is(c.Err(), context.Canceled) {
				t.Fatalf("a context made after close says %v", c.Err())
			}
		}
	})
}

// Once its contexts have ended, a Shared holds none of them, nor its
// shards: a client that made calls with a bare context and went idle keeps
// nothing of them (BenchmarkIdleClients). The next call makes them again.
func TestSharedDeadlinesLetGoOnceEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(160 * time.Second)
		a, b := d.getOf(0), d.getOf(3)
		time.Sleep(100 * time.Second)
		c := d.getOf(3) // another slice: shard 3's context is replaced
		if c == b {
			t.Fatal("a call 100s later shares a deadline that is less than the timeout away")
		}
		bd, _ := b.Deadline()
		time.Sleep(time.Until(bd))
		synctest.Wait()
		if a.Err() == nil || b.Err() == nil {
			t.Fatal("the first contexts did not end at their deadline")
		}
		if d.shards.Load() == nil {
			t.Fatal("the shards were let go of while a context was current")
		}
		cd, _ := c.Deadline()
		time.Sleep(time.Until(cd))
		synctest.Wait()
		if shards := d.shards.Load(); shards != nil {
			t.Fatal("every context ended, and the shards are still held")
		}
		if e := d.getOf(3); e.Err() != nil {
			t.Fatalf("the next call's context says %v", e.Err())
		}
		d.Close()
		synctest.Wait()
		if d.shards.Load() != nil {
			t.Fatal("after Close, the ended contexts and the shards are still held")
		}
	})
}
