package rig

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/resilientmcp/resilientmcp/client/observe"
)

// Recorder is an Observer that writes down what it is told, as lines, and
// checks that each call's context passes through every observer.
type Recorder struct {
	T    *testing.T
	Name string
	// before is the observer given before this one, whose context value
	// this one must see.
	Before string

	Mu     sync.Mutex
	lines  []string
	events []observe.Event
}

type recorderKey struct{ Name string }

func (r *Recorder) Add(format string, args ...any) {
	r.Mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	r.Mu.Unlock()
}

func (r *Recorder) see(ctx context.Context, what string) {
	if ctx.Value(recorderKey{r.Name}) == nil {
		r.T.Errorf("%s: %s's context does not carry its own StartCall's", r.Name, what)
	}
	if r.Before != "" && ctx.Value(recorderKey{r.Before}) == nil {
		r.T.Errorf("%s: %s's context does not carry %s's", r.Name, what, r.Before)
	}
}

func (r *Recorder) StartCall(ctx context.Context, call observe.CallInfo) context.Context {
	r.Add("call %s %s", call.Method, call.Tool)
	return context.WithValue(ctx, recorderKey{r.Name}, true)
}

func (r *Recorder) StartAttempt(ctx context.Context, a observe.AttemptInfo) context.Context {
	r.see(ctx, "StartAttempt")
	r.Add("attempt %d %s waited=%s", a.Number, a.Reason, a.Waited)
	return ctx
}

func (r *Recorder) EndAttempt(ctx context.Context, end observe.AttemptEnd) {
	r.see(ctx, "EndAttempt")
	r.Add("attempt ended %q", end.ErrorType)
}

func (r *Recorder) EndCall(ctx context.Context, end observe.CallEnd) {
	r.see(ctx, "EndCall")
	r.Add("call ended %q after %d", end.ErrorType, end.Attempts)
}

func (r *Recorder) HandleEvent(_ observe.Server, ev observe.Event) {
	r.Mu.Lock()
	r.events = append(r.events, ev)
	r.Mu.Unlock()
}

func (r *Recorder) Told() ([]string, []observe.Event) {
	r.Mu.Lock()
	defer r.Mu.Unlock()
	return slices.Clone(r.lines), slices.Clone(r.events)
}
