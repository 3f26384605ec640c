package auth

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/internal/authserver"
	"github.com/resilientmcp/resilientmcp/internal/redistest"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// sharedStore is a Store the replicas share, as their environment names
// it: a directory for a FileStore, or a fresh redis-server.
func sharedStore(t *testing.T, kind string, persist bool) (string, *redistest.Server) {
	if kind == "file" {
		return "file:" + filepath.Join(t.TempDir(), "grants"), nil
	}
	r := redistest.Start(t, persist)
	return "redis:" + r.Addr(), r
}

// totals sums the replicas' reports.
func totals(reps []replicaReport) (calls, failed, notUnavailable, asked, takeovers int64, firstErr string) {
	for _, r := range reps {
		for _, n := range r.phases {
			calls, failed, notUnavailable = calls+n[0], failed+n[1], notUnavailable+n[2]
		}
		asked += r.asked
		takeovers += r.takeovers
		if firstErr == "" {
			firstErr = r.firstErr
		}
	}
	return
}

// F33: four replica processes of one agent, 16 goroutines each, share one
// grant (a FileStore, then Redis) through token expiries, "all tokens
// invalid now" and an outage of the authorization server. Started
// together, they register once and ask the user once (the others wait for
// the first); each expiry is refreshed once between them; no refresh token
// is ever spent twice.
func TestF33ReplicasShareOneGrant(t *testing.T) {
	const lifetime = 2 * time.Second
	for _, kind := range []string{"file", "redis"} {
		t.Run(kind, func(t *testing.T) {
			as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: lifetime}, testserver.Config{Era: testserver.StatelessEra})
			store, _ := sharedStore(t, kind, false)
			env := map[string]string{"URL": srv.URL(), "STORE": store, "LEASE": "40s", "CALLERS": "16", "DEADLINE": "10s"}
			start := time.Now()
			var rs []*replica
			for range 4 {
				rs = append(rs, startReplica(t, env))
			}
			for _, r := range rs {
				if !r.waitFor("ready", 30*time.Second) {
					t.Fatal("a replica made no successful call in 30s")
				}
			}
			time.Sleep(lifetime + lifetime/4) // an expiry
			// All tokens invalid now: the next request of every replica is
			// refused, and one refresh replaces the token for all.
			as.InvalidateAccessTokens()
			// The authorization server is down from before that token's
			// refresh is due until after it expires.
			time.Sleep(lifetime * 8 / 10)
			as.SetDown(true)
			time.Sleep(lifetime * 3 / 10)
			as.SetDown(false)
			time.Sleep(lifetime)
			var reps []replicaReport
			for _, r := range rs {
				reps = append(reps, r.finish())
			}
			elapsed := time.Since(start)
			st := as.Stats()
			calls, failed, _, asked, takeovers, firstErr := totals(reps)
			expiries := int64(elapsed/(lifetime*9/10)) + 1 // and the invalidation
			t.Logf("%s: %d calls, %d failed; registrations %d, authorizations %d (user asked %d), refreshes %d for %d expiries, reuse detected %d, lock takeovers %d, token requests %d (%d while down)",
				kind, calls, failed, st.Registrations, st.Authorizations, asked, st.Refreshes, expiries, st.ReuseDetected, takeovers, st.TokenRequests, st.TokenRequestsWhileDown)
			if failed != 0 || calls < 1000 {
				t.Errorf("%d of %d calls failed (first: %s); want none of many", failed, calls, firstErr)
			}
			if st.ReuseDetected != 0 {
				t.Errorf("%d refresh tokens spent twice; want 0", st.ReuseDetected)
			}
			if st.Registrations != 1 || st.Authorizations != 1 || asked != 1 {
				t.Errorf("%d registrations, %d authorizations, user asked %d times; want 1, 1, 1", st.Registrations, st.Authorizations, asked)
			}
			if st.Refreshes > expiries+2 || st.Refreshes < 3 {
				t.Errorf("%d refreshes for %d expiries; want one per expiry between all replicas", st.Refreshes, expiries)
			}
		})
	}
}

// F33: a replica is killed (SIGKILL) while it holds the lock, waiting for
// the user; the others wait for its lease, no longer, then one of them
// asks the user and all go on; nothing is revoked.
func TestF33ReplicaKilledHoldingTheLock(t *testing.T) {
	as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: 2 * time.Second}, testserver.Config{Era: testserver.StatelessEra})
	store, _ := sharedStore(t, "redis", false)
	const lease = 1500 * time.Millisecond
	env := map[string]string{"URL": srv.URL(), "STORE": store, "LEASE": lease.String(), "CALLERS": "4", "DEADLINE": "20s"}
	hang := map[string]string{"AUTHORIZE": "hang"}
	for k, v := range env {
		hang[k] = v
	}
	holder := startReplica(t, hang)
	if !holder.waitFor("authorizing", 30*time.Second) {
		t.Fatal("the first replica never asked the user")
	}
	others := []*replica{startReplica(t, env), startReplica(t, env)}
	time.Sleep(500 * time.Millisecond) // they wait for the lock
	holder.kill()
	killed := time.Now()
	for _, r := range others {
		if !r.waitFor("ready", 30*time.Second) {
			t.Fatal("a replica made no successful call after the holder died")
		}
	}
	goOn := time.Since(killed)
	time.Sleep(3 * time.Second) // an expiry
	var reps []replicaReport
	for _, r := range others {
		reps = append(reps, r.finish())
	}
	st := as.Stats()
	calls, failed, _, asked, takeovers, firstErr := totals(reps)
	t.Logf("holder killed; the others went on after %v (lease %v): %d calls, %d failed; registrations %d, authorizations %d (user asked %d by the survivors, 1 by the killed one), refreshes %d, reuse detected %d, lock takeovers %d",
		goOn.Round(time.Millisecond), lease, calls, failed, st.Registrations, st.Authorizations, asked, st.Refreshes, st.ReuseDetected, takeovers)
	if failed != 0 || st.ReuseDetected != 0 {
		t.Errorf("%d calls failed (first: %s), %d reuses; want none", failed, firstErr, st.ReuseDetected)
	}
	if takeovers != 1 || asked != 1 || st.Authorizations != 1 {
		t.Errorf("%d takeovers, user asked %d times, %d authorizations; want 1, 1, 1", takeovers, asked, st.Authorizations)
	}
	if goOn > lease+5*time.Second {
		t.Errorf("the others went on %v after the kill; want about the lease, %v", goOn, lease)
	}
}

// F33: an agent that registered dynamically is restarted (a new process)
// on the same FileStore after its token expired: it finds its
// registration and refresh token, and the user is not asked.
func TestF33RestartedAgentFindsItsGrant(t *testing.T) {
	const lifetime = time.Second
	as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: lifetime}, testserver.Config{Era: testserver.StatelessEra})
	store, _ := sharedStore(t, "file", false)
	env := map[string]string{"URL": srv.URL(), "STORE": store, "CALLERS": "0", "DEADLINE": "20s"}
	first := startReplica(t, env).finish()
	time.Sleep(lifetime + 200*time.Millisecond)
	second := startReplica(t, env).finish()
	st := as.Stats()
	t.Logf("first process: user asked %d; restarted: user asked %d, calls %v; registrations %d, authorizations %d, refreshes %d, reuse detected %d",
		first.asked, second.asked, second.phases["start"], st.Registrations, st.Authorizations, st.Refreshes, st.ReuseDetected)
	if n := second.phases["start"]; n[0] != 1 || n[1] != 0 || second.asked != 0 {
		t.Errorf("restarted: %v calls/failed, user asked %d (%s); want the call to succeed, nobody asked", n, second.asked, second.firstErr)
	}
	if st.Registrations != 1 || st.Authorizations != 1 || st.Refreshes != 1 || st.ReuseDetected != 0 {
		t.Errorf("registrations %d, authorizations %d, refreshes %d, reuses %d; want 1, 1, 1, 0", st.Registrations, st.Authorizations, st.Refreshes, st.ReuseDetected)
	}
}

// F33: Redis is stopped for longer than a token's lifetime, then started
// again (with its data, as a Redis holding credentials should be). While
// it is down, held tokens keep working until they expire, no renewal is
// sent, and calls then end with ErrUnavailable by their deadline; once it
// is back, calls succeed again, and no refresh token was spent twice.
func TestF33RedisStoppedAndStarted(t *testing.T) {
	const lifetime = 2 * time.Second
	as, srv := rig.GuardedServer(t, authserver.Config{AccessTokenLifetime: lifetime}, testserver.Config{Era: testserver.StatelessEra})
	store, redisSrv := sharedStore(t, "redis", true)
	env := map[string]string{"URL": srv.URL(), "STORE": store, "LEASE": "40s", "CALLERS": "8", "DEADLINE": "1s"}
	rs := []*replica{startReplica(t, env), startReplica(t, env)}
	for _, r := range rs {
		if !r.waitFor("ready", 30*time.Second) {
			t.Fatal("a replica made no successful call in 30s")
		}
	}
	time.Sleep(lifetime)
	phase := func(name string) {
		for _, r := range rs {
			r.phase(name)
		}
	}
	phase("down")
	redisSrv.Stop()
	downRequests := as.Stats().TokenRequests
	time.Sleep(lifetime + time.Second) // past every held token's expiry
	sentWhileDown := as.Stats().TokenRequests - downRequests
	phase("back")
	redisSrv.Restart()
	time.Sleep(2 * time.Second) // the backoff's next attempt
	phase("settled")
	time.Sleep(lifetime + lifetime/4) // an expiry
	var reps []replicaReport
	for _, r := range rs {
		reps = append(reps, r.finish())
	}
	st := as.Stats()
	var sum = map[string][3]int64{}
	for _, rep := range reps {
		for p, n := range rep.phases {
			s := sum[p]
			sum[p] = [3]int64{s[0] + n[0], s[1] + n[1], s[2] + n[2]}
		}
	}
	_, _, _, asked, takeovers, firstErr := totals(reps)
	t.Logf("calls/failed/failed-not-ErrUnavailable by phase: %v; token requests while Redis was down %d; registrations %d, authorizations %d (user asked %d), refreshes %d, reuse detected %d, lock takeovers %d",
		fmt.Sprint(sum), sentWhileDown, st.Registrations, st.Authorizations, asked, st.Refreshes, st.ReuseDetected, takeovers)
	if s := sum["start"]; s[1] != 0 {
		t.Errorf("before Redis stopped: %d calls failed (%s)", s[1], firstErr)
	}
	if s := sum["down"]; s[2] != 0 || s[0] == s[1] {
		t.Errorf("while Redis was down: %v; want some calls served by held tokens, the others ErrUnavailable only (%s)", s, firstErr)
	}
	if sentWhileDown != 0 {
		t.Errorf("%d token requests while Redis was down; want none without the lock", sentWhileDown)
	}
	if s := sum["settled"]; s[0] == 0 || s[1] != 0 {
		t.Errorf("once Redis was back: %v; want calls, none failed (%s)", s, firstErr)
	}
	if st.ReuseDetected != 0 || st.Registrations != 1 || asked != 1 {
		t.Errorf("%d reuses, %d registrations, user asked %d times; want 0, 1, 1", st.ReuseDetected, st.Registrations, asked)
	}
}
