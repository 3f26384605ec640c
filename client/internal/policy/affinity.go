package policy

import "time"

// Lost affinity (F39). A session-era server behind a load balancer that
// does not keep a session on one replica (round robin, an affinity cookie
// dropped) forgets most sessions on their very next request: the replica
// that answers did not hand the session out. Each loss looks like a
// restart's (404), and re-initializing after each is right for a restart
// and a storm here: one new session per request, every call failing.
//
// The two differ in how old the sessions are when they are lost. A restart
// forgets sessions that have served (under load, thousands of requests
// each), once per restart; the session opened next survives. Without
// affinity, the sessions die young one after another: in their own
// handshake (the initialized notification lands elsewhere), or within their
// first requests. So a pool member that loses NoAffinityAfter sessions in a
// row young (before each answered ProvenAnswers requests and within
// YoungAge of its opening) stops opening sessions: the deployment needs
// affinity, and calls end with a typed error at once, without a request,
// for NoAffinityHold. Then one session is opened again, as a circuit
// breaker's half-open probe (the load balancer may have been fixed): if it
// dies young too, the verdict stands for another hold; once a session has
// answered ProvenAnswers requests, the count starts over.
//
// Bound on sessions opened: NoAffinityAfter per member before the verdict
// (about half a second apart with the default backoff), then one per
// member per NoAffinityHold: with one member, 3 sessions in the first
// second and 0.2 a second after, where re-initializing after every loss
// opens one per request.
//
// False verdicts: with affinity, a young loss needs a replica to go away
// within seconds of a session's opening, before it answered 3 requests,
// three times in a row for the same member; a rolling restart moves each
// session once per replica, and the sessions in between answer requests.
// A false verdict costs a hold's worth of calls failing with a typed
// error, not a hang.
const (
	// ProvenAnswers: a session that answered this many requests was kept
	// on its replica; its loss is a restart's, not a missing affinity.
	ProvenAnswers = 3
	// YoungAge: a session lost later than this after opening was not lost
	// young, however few requests it had to answer (an idle client whose
	// server expired its session).
	YoungAge = 10 * time.Second
	// NoAffinityAfter: young losses in a row that mean no affinity.
	NoAffinityAfter = 3
	// NoAffinityHold: how long calls fail at once after the verdict
	// before one session is opened again.
	NoAffinityHold = 5 * time.Second
)

// YoungLoss reports whether losing a session for loss, after it answered
// answers requests and age after it opened, counts towards a verdict of no
// affinity: a session-era session the server forgot before it proved it
// was kept on one replica.
func YoungLoss(loss Loss, sessionEra bool, answers int32, age time.Duration) bool {
	return loss == LossExpired && sessionEra && answers < ProvenAnswers && age < YoungAge
}

// NoAffinity reports whether young losses in a row mean the deployment
// does not keep sessions on one replica.
func NoAffinity(youngInARow int32) bool { return youngInARow >= NoAffinityAfter }
