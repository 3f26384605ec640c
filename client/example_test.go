package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/client/observe"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
)

// exampleServer starts an MCP server on 127.0.0.1 for the examples (a real
// mcp-go server that can be stopped and restarted on the same address) and
// returns it and a way to stop it for good.
func exampleServer(era testserver.Era) (*testserver.Server, func()) {
	srv, err := testserver.Start(testserver.Config{Era: era})
	if err != nil {
		log.Fatal(err)
	}
	return srv, srv.Close
}

// Replacing mcp-go's streamable HTTP client: New does no I/O, Close is
// deferred at once, and Initialize is optional (the first call initializes).
// The server restarts between the calls; the client opens a new session
// and the second call succeeds.
func Example() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()

	c, err := client.New(srv.URL(), client.WithKeepAlive(30*time.Second))
	if err != nil {
		log.Fatal(err) // a bad URL or option
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	echo := func(text string) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": text}
		res, err := c.CallTool(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(mcp.TextContent).Text)
	}
	echo("before the restart")
	if err := srv.Restart(); err != nil { // every session expires
		log.Fatal(err)
	}
	echo("after the restart")
	fmt.Println("re-initializations:", c.Stats().Reinitializations)
	// Output:
	// before the restart
	// after the restart
	// re-initializations: 1
}

// Keepalive probes a session idle for the interval in the background, and
// a session not heard from within it before a call is sent on it, so that
// a connection a load balancer dropped in the night is replaced before the
// morning's first call meets it.
func ExampleWithKeepAlive() {
	srv, stop := exampleServer(testserver.StatelessEra)
	defer stop()

	c, err := client.New(srv.URL(),
		client.WithKeepAlive(20*time.Second),       // below the idle timeouts of common load balancers
		client.WithKeepAliveTimeout(5*time.Second), // how long one probe may take
		client.WithKeepAliveFailureThreshold(2),    // two failed probes in a row replace the session
		client.WithStateHandler(func(from, to client.State) { fmt.Println(from, "->", to) }),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("state:", c.State())
	// Output:
	// Idle -> Connecting
	// Connecting -> Ready
	// state: Ready
	// Ready -> Closed
}

// Every error answers one question: may the request have run on the
// server? Branch with errors.Is. Here the server is down until the call's
// deadline: the call did not run, and trying again later is safe.
func Example_errors() {
	srv, stop := exampleServer(testserver.StatelessEra)
	defer stop()
	c, err := client.New(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "increment"
	_, err = c.CallTool(ctx, req)
	switch {
	case err == nil:
		fmt.Println("it ran")
	case errors.Is(err, client.ErrUnavailable):
		fmt.Println("it did not run; safe to try again")
	case errors.Is(err, client.ErrOutcomeUnknown):
		fmt.Println("it may have run; check before trying again")
	case errors.Is(err, client.ErrAuthorizationRequired):
		fmt.Println("the server wants authorization")
	case errors.Is(err, client.ErrClosed):
		fmt.Println("the client was closed")
	default:
		fmt.Println("the server answered with an error of its own:", err)
	}
	fmt.Println("and the deadline passed:", errors.Is(err, context.DeadlineExceeded))
	// Output:
	// it did not run; safe to try again
	// and the deadline passed: true
}

// A call whose answer is lost after the server ran it: the error says it
// may have run (ErrOutcomeUnknown), and the client refused to replay it,
// since increment is neither read-only nor idempotent (its annotations say
// so). The caller, who knows what the tool does, checks before trying
// again.
func ExampleErrOutcomeUnknown() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()
	c, err := client.New(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	// The server runs the next tool call, then drops the connection
	// instead of answering.
	srv.FailPOSTs(1, 0, "", true, "tools/call")

	req := mcp.CallToolRequest{}
	req.Params.Name = "increment"
	_, err = c.CallTool(context.Background(), req)
	fmt.Println("outcome unknown:", errors.Is(err, client.ErrOutcomeUnknown))
	fmt.Println("unavailable (safe to retry):", errors.Is(err, client.ErrUnavailable))
	fmt.Println("runs on the server:", srv.ToolRuns("increment"))
	// Output:
	// outcome unknown: true
	// unavailable (safe to retry): false
	// runs on the server: 1
}

// A pool of sessions shared by many goroutines: each call goes to the
// healthy session with the fewest calls in flight. Keep the default of one
// session for servers that keep state per session.
func ExampleWithPoolSize() {
	srv, stop := exampleServer(testserver.StatelessEra)
	defer stop()
	c, err := client.New(srv.URL(), client.WithPoolSize(4))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0.0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mcp.CallToolRequest{}
			req.Params.Name = "add"
			req.Params.Arguments = map[string]any{"a": i, "b": 1}
			res, err := c.CallTool(context.Background(), req)
			if err != nil {
				log.Fatal(err)
			}
			var n float64
			fmt.Sscan(res.Content[0].(mcp.TextContent).Text, &n)
			mu.Lock()
			sum += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Println("sum:", sum)
	// Output:
	// sum: 136
}

// Iterating over the tools fetches pages as the loop goes; a listing that
// meets a restart of the server starts over rather than mixing the two
// servers' pages, and yields each tool once.
func ExampleResilientClient_IterTools() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()
	c, err := client.New(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for tool, err := range c.IterTools(context.Background(), mcp.ListToolsRequest{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(tool.Name, "read-only:", *tool.Annotations.ReadOnlyHint)
	}
	// Output:
	// add read-only: false
	// ask read-only: false
	// echo read-only: true
	// increment read-only: false
	// profile read-only: false
	// progress read-only: false
	// progressRead read-only: true
	// slow read-only: false
	// work read-only: false
}

// OnConnectionLost is told of each lost session, with the cause, before
// the client has recovered: here the server restarts, the session
// expires, and the next call finds that out.
func ExampleResilientClient_OnConnectionLost() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()
	c, err := client.New(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	lost := make(chan error, 1)
	c.OnConnectionLost(func(cause error) { lost <- cause })

	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	first := c.GetSessionId()
	if err := srv.Restart(); err != nil {
		log.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	<-lost
	fmt.Println("session lost; new session id:", c.GetSessionId() != first)
	// Output:
	// session lost; new session id: true
}

// An elicitation handler is given to mcp-go as usual. When it accepts a
// form and leaves fields out, the client fills them in from the form's
// defaults before answering the server (SEP-1034).
func ExampleWithClientOptions_elicitation() {
	srv, stop := exampleServer(testserver.StatelessEra)
	defer stop()
	c, err := client.New(srv.URL(), client.WithClientOptions(
		mcpclient.WithElicitationHandler(acceptName("Ann")),
	))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	req := mcp.CallToolRequest{}
	req.Params.Name = "profile" // asks for a name, age, score, status and verified
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// {"age":30,"name":"Ann","score":95.5,"status":"active","verified":true}
}

// acceptName is a user who types a name and leaves the rest as shown.
type acceptName string

func (n acceptName) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": string(n)},
	}}, nil
}

// retried is an Observer that answers the question a Stats snapshot
// cannot: was this call retried, and why? It keeps each call's attempts in
// the call's context and prints those of a call sent more than once.
type retried struct{}

type attemptsKey struct{}

func (retried) StartCall(ctx context.Context, _ observe.CallInfo) context.Context {
	return context.WithValue(ctx, attemptsKey{}, new([]string))
}

func (retried) StartAttempt(ctx context.Context, a observe.AttemptInfo) context.Context {
	reasons := ctx.Value(attemptsKey{}).(*[]string) // the call's, even in a resend's context
	*reasons = append(*reasons, fmt.Sprintf("%d: %s (waited: %s)", a.Number, a.Reason, a.Waited))
	return ctx
}

func (retried) EndAttempt(context.Context, observe.AttemptEnd) {}

func (retried) EndCall(ctx context.Context, end observe.CallEnd) {
	if end.Attempts > 1 {
		fmt.Printf("sent %d times: %q\n", end.Attempts, *ctx.Value(attemptsKey{}).(*[]string))
	}
}

func (retried) HandleEvent(_ observe.Server, ev observe.Event) {
	if o, ok := ev.(observe.SessionOpened); ok && o.Reason == observe.OpenReinitialize {
		fmt.Println("session re-initialized")
	}
}

// An observer is told of every call, every attempt to send it and why,
// and of what the client does on its own. Its methods must be quick and
// safe for concurrent use; otelmcp.NewObserver is one that records
// OpenTelemetry traces and metrics.
func ExampleWithObserver() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()

	c, err := client.New(srv.URL(), client.WithObserver(retried{}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "hello"}
	if _, err := c.CallTool(ctx, req); err != nil {
		log.Fatal(err)
	}
	if err := srv.Restart(); err != nil { // the session expires
		log.Fatal(err)
	}
	if _, err := c.CallTool(ctx, req); err != nil {
		log.Fatal(err)
	}
	// Output:
	// session re-initialized
	// sent 2 times: ["1: first (waited: none)" "2: session_expired (waited: reinitialize)"]
}

// A call governed by the work it reports rather than by a wall clock: the
// tool runs four times longer than WithCallTimeout, and the call lives as
// long as progress keeps coming (ProgressTimeout), with this call's
// progress handed to OnProgress, in order. A tool that went silent would
// end the call one idle period after its last report.
func ExampleWithCallOptions() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()
	c, err := client.New(srv.URL(), client.WithCallTimeout(100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	steps := 0
	ctx := client.WithCallOptions(context.Background(),
		client.ProgressTimeout(400*time.Millisecond),
		client.OnProgress(func(n mcp.ProgressNotification) { steps++ }),
	)
	req := mcp.CallToolRequest{}
	req.Params.Name = "work" // reports progress 4 times, 100ms apart: 400ms
	req.Params.Arguments = map[string]any{"n": 4, "ms": 100}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text, "after", steps, "progress notifications")
	// Output: done 4 after 4 progress notifications
}

// Failing fast when the server is gone: a FailFast call does not wait for
// the reconnect loop once an attempt to reconnect has failed; it returns
// ErrUnavailable (it did not run).
func ExampleFailFast() {
	srv, stop := exampleServer(testserver.SessionEra)
	defer stop()
	c, err := client.New(srv.URL())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		log.Fatal(err)
	}
	srv.Stop() // gone for the afternoon

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = c.Ping(client.WithCallOptions(ctx, client.FailFast()))
	fmt.Println(errors.Is(err, client.ErrUnavailable), time.Since(start) < 10*time.Second)
	// Output: true true
}
