// Package user is the person the conformance clients stand in for, shared
// by examples/conformance and its raw mcp-go baseline so that both answer
// the suite alike: a browser that approves at once, a form submitted as it
// is shown, a model that always says the same.
package user

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
)

// Browser opens the authorization URL without following the redirect, and
// returns where the authorization server sent the user.
func Browser(ctx context.Context, authURL string) (string, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("the authorization endpoint answered %s without a redirect", resp.Status)
	}
	return loc, nil
}

// AcceptAsIs accepts every elicitation and fills in nothing, as a user who
// submits a form as it is shown: the form's defaults are the answer.
type AcceptAsIs struct{}

func (AcceptAsIs) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	fmt.Fprintf(os.Stderr, "elicitation: %q accepted as shown\n", req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action:  mcp.ElicitationResponseActionAccept,
		Content: map[string]any{},
	}}, nil
}

// FixedAnswer answers every sampling request with the same text.
type FixedAnswer struct{}

func (FixedAnswer) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("ok")},
		Model:           "none",
		StopReason:      "endTurn",
	}, nil
}

// Arguments makes up a value for each property of a tool's input schema
// (its "properties"), as a user filling in a form would: the default where
// there is one, else the first of an enum, else a value of the type.
func Arguments(props map[string]any) map[string]any {
	args := map[string]any{}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		prop, _ := props[name].(map[string]any)
		if def, ok := prop["default"]; ok {
			args[name] = def
			continue
		}
		switch prop["type"] {
		case "number", "integer":
			args[name] = i + 1
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			if enum, ok := prop["enum"].([]any); ok && len(enum) > 0 {
				args[name] = enum[0]
			} else {
				args[name] = "test"
			}
		}
	}
	return args
}
