package policy

import "time"

// Lost affinity (F39). A session-era server behind a load balancer that
// does not keep a session on one replica (round robin, an affinity cookie
// dropped) sees most sessions expire on their very next request: the
// replica that answers did not hand the session out. Each loss looks like a
// restart's (404), and re-initializing after each is right for a restart
// and a storm here: one new session per request, every call failing.
//
// The two differ in how old the sessions are when they are lost. A restart
// expires sessions that have served (under load, thousands of requests
// each; idle, at least the request that found them expired was preceded by
// the one that opened the need), once per restart; the session opened next
// survives its first request. Without affinity, the sessions are lost young
// one after another: in their own handshake (the initialized notification
// lands on another replica than initialize did: a server that hands out a
// session and expires it on the next request is not restarting), or on
// their first request. So a pool member that loses NoAffinityAfter
// sessions in a row young (before each answered a single request, within
// YoungAge of its opening) stops opening sessions: the deployment needs
// affinity, and calls end with a typed error at once, without a request,
// for NoAffinityHold. Then one session is opened again, as a circuit
// breaker's half-open trial (the load balancer may have been fixed): if it
// is lost young too, the verdict stands for another hold; once a session has
// answered ProvenAnswers requests, the count starts over. A session that
// answered one or two requests and was lost neither counts nor resets: a
// replica kept it for a while by chance.
//
// Bound on sessions opened: NoAffinityAfter per member before the verdict
// (about half a second apart with the default backoff), then one per
// member per NoAffinityHold: with one member, 3 sessions in the first
// second and 0.2 a second after, where re-initializing after every loss
// opens one per request.
//
// False verdicts: with affinity, a young loss needs a session to expire
// before it answered any request, within seconds of its opening,
// three times in a row for the same member: three restarts, each between
// a session's opening and its first request (a client that listens for
// notifications and sends nothing while its server restarts three times
// in ten seconds). A rolling restart moves each session once per
// replica, and the sessions in between answer requests. A false verdict
// costs a hold's worth of calls failing with a typed error, not a hang.
const (
	// ProvenAnswers: a session that answered this many requests was kept
	// on its replica: the count of young losses starts over.
	ProvenAnswers = 3
	// YoungAge: a session lost later than this after opening was not lost
	// young, even before its first request (an idle client whose server
	// expired its session).
	YoungAge = 10 * time.Second
	// NoAffinityAfter: young losses in a row that mean no affinity.
	NoAffinityAfter = 3
	// NoAffinityHold: how long calls fail at once after the verdict
	// before one session is opened again.
	NoAffinityHold = 5 * time.Second
)

// YoungLoss reports whether losing a session for loss, after it answered
// answers requests and age after it opened, counts towards a verdict of no
// affinity: a session-era session that expired before it answered a single
// request.
func YoungLoss(loss Loss, sessionEra bool, answers int32, age time.Duration) bool {
	return loss == LossExpired && sessionEra && answers == 0 && age < YoungAge
}

// NoAffinity reports whether young losses in a row mean the deployment
// does not keep sessions on one replica.
func NoAffinity(youngInARow int32) bool { return youngInARow >= NoAffinityAfter }
