// Package client is ResilientClient: a drop-in replacement for mcp-go's
// streamable HTTP client that keeps working through server restarts, expired
// sessions, dropped connections and outages. It is the one package that joins
// the generic mechanisms (retry, health and pool) to mcp-go. NewStdio puts
// a server that is a process, spoken to over stdio, behind the same client,
// supervised (stdio.go); NewSSE a server of the deprecated HTTP+SSE
// transport, whose stream is its session (sse.go). Its words
// (expired, lost, dial, redial, resend, replay...) are defined once, in the
// glossary of the root package's doc. The failures
// it handles, by the codes (F1, F2, ...) its comments use, are listed in the
// module's FAILURES.md.
//
// Besides mcp-go's MCPClient interface, ResilientClient has the methods of
// mcp-go's concrete *client.Client (session identity and capabilities, the
// iterators, the tasks API, Discover, Listen, OnConnectionLost), with the
// same signatures and each answering for the client across
// re-initializations; only Start and GetTransport, which a pool of sessions
// that open and close on their own has no use for, are left out.
//
// # Where things are
//
// A call is one object, call.go's callRun, and every method a caller calls
// goes through one wrapper, call (the books: observers, Stats, the retry
// budget). Each attempt goes down one pipeline, callRun's methods in order:
//
//	acquire → probe before use → send → Classify → After
//
//	call              call.go (call, do): the books of every call
//	callRun           call.go (startRun, run); governs and bound: its deadline
//	                  and progress, for a call and a task call alike
//	                  (the deadlines calls with a bare context share:
//	                  client/internal/deadline)
//	acquire           call.go (callRun.acquire) asks the sessions (session.go):
//	                  the breaker first (client/internal/breaker, breaker.go), then their pool
//	probe before use  call.go (callRun.probeBeforeUse); the keepalive prober
//	                  beside which it runs is health.go
//	send              call.go (callRun.send), with mcp-go's methods from methods.go;
//	                  a plain tools/call written and read by client/internal/hotpath
//	                  (methods.go's callToolHot; hotpath.go makes it for a session)
//	Classify, After   client/internal/policy: the one decision; call.go
//	                  (callRun.afterFailure) carries it out
//	the wire          client/internal/wire: chain.go lists and builds the HTTP
//	                  path's RoundTrippers in order (tracker and guard, token,
//	                  credentials, observers, resend, transport)
//
// CallTool decides plain or task once, before the call, by the policy
// (policy.CallAs); it asks client/internal/tasks only for a task, or to
// list the tools first when the policy cannot decide without them
// (tasks.Calls.FormOnceListed).
//
// And around it:
//
//	client.go       ResilientClient, New, Close, the lock order
//	options.go      the options; calloptions.go: a call's own; the HTTP
//	                clients they make (the tuned default, each session's
//	                cookie jar) are client/internal/wire's httpclient.go
//	errors.go       what a call's error says; state.go, stats.go
//	session.go      sessions, the sessions' life beside the client's: dial,
//	                open, lose, release; health.go, breaker.go, state.go
//	                (the ordered delivery of transitions, losses and the
//	                breaker's events is client/internal/transitions)
//	                load balancers' affinity: client/internal/affinity; a
//	                session's transport (the protocol era, the Mcp-Param-*
//	                headers, tools' schemas as the server sent them):
//	                client/internal/streamable
//	stdio.go        NewStdio and its options: a server that is a process;
//	                the process, its supervision and the session opened on
//	                it are client/internal/stdio
//	sse.go          NewSSE, WithSSEFallback: HTTP+SSE (2024-11-05); its
//	                transport and the session opened on it are
//	                client/internal/sse
//	dialers.go      which of them opens a session, what each is given,
//	                and the client's session made of what it opened
//	listings.go     the options of the cache of listings and reads, Stale;
//	                the cache itself, its store writer and the tools the
//	                replay decision reads are client/internal/listings,
//	                which listinghost.go joins to the client
//	tasks.go        the tasks API, PendingTasks, ResumeTask; a tools/call
//	                made a task, and the ids of tasks not yet delivered, are
//	                client/internal/tasks, which taskcall.go serves (taskHost);
//	                the stores' types and file stores are client/store
//	progress.go     ProgressTimeoutError; which calls progress governs is
//	                call.go's governs, a call's progress itself
//	                client/internal/progress
//	messages.go     the server's messages outside calls, whose room is
//	                client/internal/notify: the notifications and their
//	                handlers, the event stream and subscriptions/listen
//	                streams (Listen), what every new session is told again
//	                (restore.go there), the registry that routes progress,
//	                notifications/cancelled, the elicitation defaults
//	                (elicitation.go: the transport that declares them)
//	observer.go     WithObserver; the observers, their call traces and the
//	                counters are client/internal/observers, their types
//	                client/observe
//	parity.go       the methods of mcp-go's *client.Client; iter.go
//	oauth.go        authorization
package client
