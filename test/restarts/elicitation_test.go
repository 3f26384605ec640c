package restarts

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client"
	"github.com/resilientmcp/resilientmcp/internal/testserver"
	"github.com/resilientmcp/resilientmcp/test/internal/rig"
)

// SEP-1034: the fields the user's elicitation handler leaves out of an
// accepted form are filled in from the schema's defaults before the answer
// goes to the server, in both eras, on every session; and the client
// declares that it does so (elicitation.form.applyDefaults).
func TestElicitationDefaultsAcrossRestart(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			answer := make(chan *mcp.ElicitationResult, 1)
			handler := elicitFunc(func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				return <-answer, nil
			})
			bodies := &bodyRecorder{next: http.DefaultTransport}
			r := rig.New(t, testserver.Config{Era: era}, false,
				client.WithHTTPClient(&http.Client{Transport: bodies}),
				client.WithClientOptions(mcpclient.WithElicitationHandler(handler)))
			r.Start()
			profile := func(res *mcp.ElicitationResult) map[string]any {
				t.Helper()
				answer <- res
				text, err := rig.CallTool(r.Ctx(), r.C, "profile", nil)
				if err != nil {
					t.Fatalf("profile: %v", err)
				}
				var got map[string]any
				if err := json.Unmarshal([]byte(text), &got); err != nil {
					t.Fatalf("profile answered %q", text)
				}
				return got
			}
			accept := func(content any) *mcp.ElicitationResult {
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: content}}
			}

			got := profile(accept(map[string]any{"name": "Ann", "age": 41}))
			want := map[string]any{"name": "Ann", "age": 41.0, "score": 95.5, "status": "active", "verified": true}
			if !sameJSON(got, want) {
				t.Errorf("accepted with two fields: server got %v, want %v", got, want)
			}
			if err := r.Srv.Restart(); err != nil {
				t.Fatal(err)
			}
			// A safe call first: profile is not safe to repeat, and right
			// after a restart a call may meet a connection the old server
			// closed (docs/failures.md, "Known limits").
			r.MustEcho("after the restart")
			got = profile(accept(nil))
			want = map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}
			if !sameJSON(got, want) {
				t.Errorf("accepted with no content after a restart: server got %v, want %v", got, want)
			}
			answer <- &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}
			if text, err := rig.CallTool(r.Ctx(), r.C, "profile", nil); err != nil || text != "decline" {
				t.Errorf("declined: %q, %v", text, err)
			}
			if !bodies.contains(`"applyDefaults":true`) {
				t.Errorf("no request declared elicitation.form.applyDefaults")
			}
		})
	}
}

// A client without an elicitation handler declares no elicitation at all:
// reading the caller's options back must not add one.
func TestNoElicitationHandlerDeclaresNone(t *testing.T) {
	for _, era := range rig.BothEras {
		t.Run(era.String(), func(t *testing.T) {
			bodies := &bodyRecorder{next: http.DefaultTransport}
			r := rig.New(t, testserver.Config{Era: era}, false,
				client.WithHTTPClient(&http.Client{Transport: bodies}),
				client.WithClientOptions(mcpclient.WithRootsHandler(rootsHandler{})))
			r.Start()
			r.MustEcho("x")
			if bodies.contains(`"elicitation"`) {
				t.Error("a client with no elicitation handler declared elicitation")
			}
		})
	}
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// bodyRecorder keeps the bodies of the requests it sends.
type bodyRecorder struct {
	next   http.RoundTripper
	mu     sync.Mutex
	bodies []string
}

func (b *bodyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(body)
			b.mu.Lock()
			b.bodies = append(b.bodies, string(bytes.TrimSpace(raw)))
			b.mu.Unlock()
		}
	}
	return b.next.RoundTrip(req)
}

func (b *bodyRecorder) contains(s string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range b.bodies {
		if strings.Contains(body, s) {
			return true
		}
	}
	return false
}
