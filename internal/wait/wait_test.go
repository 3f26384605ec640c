package wait

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if r := Sleep(context.Background(), time.Second, nil); r != Elapsed || time.Since(start) != time.Second {
			t.Errorf("plain sleep = %v after %v", r, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start = time.Now()
		if r := Sleep(ctx, time.Second, nil); r != Cancelled || time.Since(start) != 100*time.Millisecond {
			t.Errorf("sleep past the deadline = %v after %v", r, time.Since(start))
		}
		stop := make(chan struct{})
		time.AfterFunc(50*time.Millisecond, func() { close(stop) })
		start = time.Now()
		//lint:ignore SA1012 Sleep documents a nil ctx, which is what is tested
		if r := Sleep(nil, time.Second, stop); r != Stopped || time.Since(start) != 50*time.Millisecond {
			t.Errorf("stopped sleep = %v after %v", r, time.Since(start))
		}
		//lint:ignore SA1012 Sleep documents a nil ctx, which is what is tested
		if r := Sleep(nil, 0, nil); r != Elapsed {
			t.Errorf("zero sleep = %v", r)
		}
	})
}
