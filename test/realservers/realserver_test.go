package realservers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/test/internal/gosdkserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// The failure scenarios against servers nobody here wrote (testing.md):
// the official go-sdk server, in process, stateful (with and without an
// event store) and stateless, and the TypeScript reference server
// server-everything, a node child process. Each asserts the error contract
// and what the server executed, and logs the counts the contract is judged
// by. The clients are as a new user makes them; options are added only where
// the scenario is about them.

// Restarted while idle, gracefully and abruptly: every call after it
// succeeds, and each unsafe call runs once.
func TestRealServerRestartIdle(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKEventsTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		for _, how := range rig.Kills {
			t.Run(tg.Name+"/"+how.String(), func(t *testing.T) {
				srv := tg.Start(t)
				c := rig.RealClient(t, srv)
				var ty rig.Tally
				mustCall(t, c, srv, "before", &ty)
				srv.Restart(t, how)
				for i := range 3 {
					marker := fmt.Sprintf("idle-%d", i)
					_, err := rig.Call(c, srv.Unsafe(marker), 10*time.Second)
					ty.Add(err)
					if err != nil {
						t.Errorf("unsafe call %d after the restart: %v", i, err)
					}
					if n := srv.Ran(t)[marker]; n != 1 {
						t.Errorf("unsafe call %d ran %d times, want 1", i, n)
					}
					mustCall(t, c, srv, fmt.Sprint("after ", i), &ty)
				}
				t.Logf("counts: protocol %s; calls %s; stats %+v", c.ProtocolVersion(), &ty, c.Stats())
			})
		}
	}
}

// mustCall echoes text, and fails the test unless the answer is its own.
func mustCall(t *testing.T, c *client.ResilientClient, srv rig.RealServer, text string, ty *rig.Tally) {
	t.Helper()
	req, want := srv.Echo(text)
	got, err := rig.Call(c, req, 10*time.Second)
	ty.Add(err)
	if err != nil || got != want {
		t.Errorf("echo %q = %q, %v; want %q", text, got, err, want)
	}
}

// Restarted twice, once each way, under 16 goroutines calling for about
// 3×window: almost every call succeeds; every failure says whether the call
// may have run; none that may not be repeated ran twice. The windows
// between restarts are long enough that the share of calls that succeed
// reflects sustained load, not two kills in two seconds: what fails is the
// unsafe calls in flight at each kill, a number set by the concurrency, not
// by the time between restarts.
func TestRealServerRestartUnderLoad(t *testing.T) {
	const window = 3 * time.Second
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKEventsTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Start(t)
			c := rig.RealClient(t, srv)
			var safe, unsafe rig.Tally
			mustCall(t, c, srv, "before", &safe)

			const goroutines = 16
			type unsafeCall struct {
				marker string
				kind   string
			}
			var (
				mu      sync.Mutex
				unsafes []unsafeCall
				wg      sync.WaitGroup
			)
			stop := make(chan struct{})
			stopWorkers := sync.OnceFunc(func() { close(stop); wg.Wait() })
			t.Cleanup(stopWorkers) // before the client closes, even if the test fails early
			for g := range goroutines {
				wg.Go(func() {
					// Bounded in count as well as by stop.
					for i := range 20000 {
						select {
						case <-stop:
							return
						default:
						}
						if i%2 == 0 {
							req, want := srv.Echo(fmt.Sprintf("g%d-%d", g, i))
							got, err := rig.Call(c, req, 10*time.Second)
							if err == nil && got != want {
								err = fmt.Errorf("echo answered %q, want %q", got, want)
							}
							safe.Add(err)
							continue
						}
						marker := fmt.Sprintf("load-g%d-%d", g, i)
						_, err := rig.Call(c, srv.Unsafe(marker), 10*time.Second)
						kind := unsafe.Add(err)
						mu.Lock()
						unsafes = append(unsafes, unsafeCall{marker, kind})
						mu.Unlock()
					}
				})
			}
			for _, how := range rig.Kills {
				time.Sleep(window)
				srv.Restart(t, how)
			}
			time.Sleep(window)
			stopWorkers()

			twice, unavailRan, unknownRan := 0, 0, 0
			ran := srv.Ran(t)
			for _, u := range unsafes {
				n := ran[u.marker]
				if u.kind == "outcome unknown" && n > 0 {
					unknownRan++
				}
				switch {
				case n > 1:
					twice++
					if twice <= 3 {
						t.Errorf("unsafe call %s ran %d times (the caller saw %s)", u.marker, n, u.kind)
					}
				case u.kind == "ok" && n != 1:
					t.Errorf("unsafe call %s succeeded but ran %d times", u.marker, n)
				case u.kind == "unavailable" && n != 0:
					unavailRan++
					t.Errorf("unsafe call %s ended ErrUnavailable but ran", u.marker)
				}
			}
			ok, total := safe.OK+unsafe.OK, safe.Total()+unsafe.Total()
			t.Logf("counts: protocol %s; %d calls; safe (echo): %s; unsafe: %s; unsafe calls that ran twice: %d, that ran though unavailable: %d, that ran (or reached the server's socket) of those with outcome unknown: %d; stats %+v",
				c.ProtocolVersion(), total, &safe, &unsafe, twice, unavailRan, unknownRan, c.Stats())
			// A safe call is sent again until it is answered: none fails.
			if safe.OK != safe.Total() {
				t.Errorf("%d of %d safe calls failed: a call that may be repeated must survive a restart", safe.Total()-safe.OK, safe.Total())
			}
			if unsafe.Untyped > 0 {
				t.Errorf("%d calls failed with an error that is neither ErrOutcomeUnknown nor ErrUnavailable", unsafe.Untyped)
			}
			// What fails is only what was in flight when a process died:
			// at most one unsafe call per goroutine per restart (and one
			// more written on a connection whose close had not reached the
			// client yet), each ErrOutcomeUnknown: a SIGKILL leaves no way
			// to tell whether it ran. Nothing is ErrUnavailable: a call that
			// was not sent waits for the server.
			if unsafe.Unknown > goroutines*len(rig.Kills) || unsafe.Unavail > 0 {
				t.Errorf("%d outcome unknown and %d unavailable for %d restarts of %d goroutines: more than the calls in flight at a restart", unsafe.Unknown, unsafe.Unavail, len(rig.Kills), goroutines)
			}
			t.Logf("%.2f%% of %d calls succeeded; %d failed, every one an unsafe call with its outcome unknown", 100*float64(ok)/float64(total), total, total-ok)
		})
	}
}

// The process is stopped for 4s (SIGSTOP) and continued, with keepalive
// small: a call made while it is frozen returns by its deadline; the calls
// after SIGCONT succeed.
func TestRealServerFrozen(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel() // mostly waiting for the 4s to pass
			srv := tg.Start(t)
			c := rig.RealClient(t, srv, client.WithKeepAlive(300*time.Millisecond))
			var ty rig.Tally
			mustCall(t, c, srv, "before", &ty)
			srv.Freeze(t)
			thawed := false
			thaw := func() {
				if !thawed {
					thawed = true
					srv.Thaw(t)
				}
			}
			defer thaw()

			// A call while frozen: its deadline, not the server, ends it.
			const deadline = 1500 * time.Millisecond
			frozenErr := make(chan error, 1)
			go func() {
				req, _ := srv.Echo("while frozen")
				_, err := rig.Call(c, req, deadline)
				frozenErr <- err
			}()
			select {
			case err := <-frozenErr:
				ty.Add(err)
				if err == nil {
					t.Errorf("a call to the frozen server succeeded")
				} else if !errors.Is(err, context.DeadlineExceeded) || rig.ErrKind(err) == "untyped" {
					t.Errorf("call while frozen = %v; want a typed error carrying context.DeadlineExceeded", err)
				}
			case <-time.After(deadline + 2*time.Second):
				t.Errorf("a call with a %v deadline still hangs %v later", deadline, 2*time.Second)
			}
			time.Sleep(4*time.Second - deadline)
			thaw()

			for i := range 3 {
				mustCall(t, c, srv, fmt.Sprint("after SIGCONT ", i), &ty)
				marker := fmt.Sprintf("thawed-%d", i)
				_, err := rig.Call(c, srv.Unsafe(marker), 10*time.Second)
				ty.Add(err)
				if err != nil {
					t.Errorf("unsafe call %d after SIGCONT: %v", i, err)
				}
				if n := srv.Ran(t)[marker]; n != 1 {
					t.Errorf("unsafe call %d ran %d times, want 1", i, n)
				}
			}
			t.Logf("counts: protocol %s; calls %s; stats %+v", c.ProtocolVersion(), &ty, c.Stats())
		})
	}
}

// The server restarts, once each way, while a long read-only call reports
// progress: the call succeeds, replayed or its stream resumed.
func TestRealServerRestartDuringLongCall(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKEventsTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		for _, how := range rig.Kills {
			t.Run(tg.Name+"/"+how.String(), func(t *testing.T) {
				srv := tg.Start(t)
				c := rig.RealClient(t, srv)
				var progress atomic.Int64
				c.OnNotification(func(n mcp.JSONRPCNotification) {
					if n.Method == string(mcp.MethodNotificationProgress) {
						progress.Add(1)
					}
				})
				var ty rig.Tally
				mustCall(t, c, srv, "before", &ty)

				done := make(chan error, 1)
				go func() {
					_, err := rig.Call(c, srv.Long("long-1"), 20*time.Second)
					done <- err
				}()
				rig.Eventually(t, "the first progress notification", func() bool { return progress.Load() > 0 })
				before := progress.Load()
				srv.Restart(t, how)
				err := <-done
				ty.Add(err)
				if err != nil {
					t.Errorf("long call across a %s restart: %v", how, err)
				}
				t.Logf("counts: long call %s; progress notifications %d before the restart, %d in all; server ran long %d times; stats %+v",
					&ty, before, progress.Load(), srv.LongRuns(), c.Stats())
			})
		}
	}
}

// A subscription survives restarts, once each way: after each, an update
// reaches the handler with no call made.
func TestRealServerSubscriptionAcrossRestarts(t *testing.T) {
	for _, tg := range []rig.Target{rig.GoSDKTarget, rig.GoSDKStatelessTarget, rig.EverythingTarget} {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Start(t)
			c := rig.RealClient(t, srv)
			got := make(chan struct{}, 256)
			var updates atomic.Int64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationResourceUpdated) && n.Params.AdditionalFields["uri"] == srv.URI() {
					updates.Add(1)
					select {
					case got <- struct{}{}:
					default:
					}
				}
			})
			if err := c.Subscribe(ctxFor(t, 10*time.Second), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: srv.URI()}}); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			se, _ := srv.(*rig.ServerEverything)
			if se != nil {
				srv.Update(t, c)
			}
			if !awaitUpdates(t, srv, got, se == nil) {
				t.Fatal("no update reached the handler before any restart")
			}

			var report []string
			for _, how := range rig.Kills {
				calls := c.Stats().Calls
				subscribed := 0
				if se != nil {
					subscribed = se.Answered("resources/subscribe")
				}
				drain(got)
				srv.Restart(t, how)
				restarted := time.Now()
				if se != nil {
					// It sends updates only after a call, so the client's
					// part without one is what it restored on its own: the
					// subscription, on a session it opened in the background.
					// Then the call that has the server send an update.
					resubscribed := func() bool { return se.Answered("resources/subscribe") > subscribed }
					if !rig.Within(5*time.Second, resubscribed) {
						t.Errorf("after %s: the client did not subscribe again on the restarted server within 5s with no call made", how)
					} else {
						report = append(report, fmt.Sprintf("%s: subscribed again after %v with no call", how, time.Since(restarted).Round(time.Millisecond)))
					}
					srv.Update(t, c)
				}
				if !awaitUpdates(t, srv, got, se == nil) {
					t.Errorf("after %s: no update reached the handler within 5s", how)
					report = append(report, fmt.Sprintf("%s: no update (stats %+v)", how, c.Stats()))
				} else {
					report = append(report, fmt.Sprintf("%s: update after %v", how, time.Since(restarted).Round(time.Millisecond)))
				}
				if se == nil && c.Stats().Calls != calls {
					t.Errorf("after %s: calls were made", how)
				}
			}
			t.Logf("counts: protocol %s; %d updates received; %s; stats %+v", c.ProtocolVersion(), updates.Load(), strings.Join(report, "; "), c.Stats())
		})
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// awaitUpdates waits, boundedly, for an update to reach the handler; with
// trigger it has the server announce one every 50ms meanwhile (a server
// sends updates only to the subscriptions it knows of at the moment).
func awaitUpdates(t *testing.T, srv rig.RealServer, got <-chan struct{}, trigger bool) bool {
	t.Helper()
	for range 100 {
		if trigger {
			srv.Update(t, nil)
		}
		select {
		case <-got:
			return true
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// The server forgets the session while the process lives on: go-sdk's
// SessionTimeout closes it after 200ms without a request; server-everything
// is told to end it (DELETE, as another client holding its id could). The
// next calls succeed, and an unsafe one runs once.
func TestRealServerExpiresSession(t *testing.T) {
	for _, tg := range []rig.Target{
		{Name: "go-sdk-session-timeout", Start: func(t *testing.T) rig.RealServer {
			return rig.StartGoSDK(t, gosdkserver.Config{SessionTimeout: 200 * time.Millisecond})
		}},
		rig.EverythingTarget,
	} {
		t.Run(tg.Name, func(t *testing.T) {
			srv := tg.Start(t)
			c := rig.RealClient(t, srv)
			var ty rig.Tally
			mustCall(t, c, srv, "before", &ty)
			old := c.GetSessionId()
			if old == "" {
				t.Fatal("no session id")
			}
			if e, ok := srv.(*rig.ServerEverything); ok {
				deleteSession(t, e.Srv.URL(), old)
			} else {
				time.Sleep(600 * time.Millisecond)
			}
			_, err := rig.Call(c, srv.Unsafe("forgotten-1"), 10*time.Second)
			ty.Add(err)
			if err != nil {
				t.Errorf("unsafe call on the forgotten session: %v", err)
			}
			if n := srv.Ran(t)["forgotten-1"]; n != 1 {
				t.Errorf("unsafe call ran %d times, want 1", n)
			}
			mustCall(t, c, srv, "after", &ty)
			if now := c.GetSessionId(); now == old {
				t.Errorf("the client still uses the forgotten session %s", old)
			}
			t.Logf("counts: protocol %s; calls %s; stats %+v", c.ProtocolVersion(), &ty, c.Stats())
		})
	}
}

// deleteSession ends session id on the server at url, as its spec allows
// any holder of the id to.
func deleteSession(t *testing.T, url, id string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 5*time.Second), http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE session: %s", resp.Status)
	}
}
