// Package progress is the room of calls followed by their progress
// (ProgressTimeout, OnProgress): each call's Call, which is its context,
// its progressToken put in its requests on their way out (a byte edit),
// its idle clock and the delivery of its notifications; and the Registry
// that routes notifications/progress to the calls by token. It knows
// nothing of sessions or of the client.
package progress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

// TimeoutError is in the chain of a call that ended because no progress
// came for it for Idle (client.ProgressTimeout, WithProgressTimeout). It
// matches context.DeadlineExceeded with errors.Is: the call ran out of time,
// as a deadline would have ended it. Like every error the client returns, it
// is immutable and safe to share between goroutines.
type TimeoutError struct {
	Idle time.Duration
}

func (e *TimeoutError) Error() string {
	return "no progress for " + e.Idle.String()
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Call is one call governed by progress, or followed by OnProgress.
// It is the context the call runs under: when governed by progress, a
// context that ends, with context.DeadlineExceeded, when no progress has
// come for idle while a request of the call is out. Contexts derived from
// it hook into the cancelCtx it embeds, without a goroutine. A call made
// through the call path holds it in its callRun (governedRun), so that the
// call's state, its context and its token are one allocation; bound (call.go)
// sets it up. Its token goes into the call's requests on their way out, as
// a byte edit (RewriteRequest), whatever the method.
//
// A Call is safe for concurrent use: the call's goroutine, the
// session's reader (progress), the registry's idle clock and its delivery
// goroutine all use it.
type Call struct {
	// The call's context: a cancelCtx under the call's absolute bound when
	// governed by progress (idle > 0); followed for OnProgress only, the
	// call's bounded context itself.
	context.Context
	cancel     context.CancelCauseFunc // nil when followed for OnProgress only
	stop       context.CancelFunc      // ends the context of the absolute bound, if one was made
	reg        *Registry
	idle       time.Duration // 0: followed for OnProgress only
	onProgress func(mcp.ProgressNotification)
	start      time.Time
	last       atomic.Int64 // since start: the last progress, or the last send
	out        atomic.Bool  // a request of the call is out
	// On the registry's idle clock (governed by progress, from its first
	// send to its end), in the list of calls it watches. Guarded by
	// reg.mu.
	clocked            bool
	prevIdle, nextIdle *Call

	// token is the progressToken the call's requests carry, and key its
	// registry key: the caller's own or the client's; set by the first
	// request and kept through replays, so that a replay's progress still
	// belongs to the call. Guarded by mu.
	mu         sync.Mutex // guards the fields below; a leaf
	token, key string
	queue      []mcp.ProgressNotification // for onProgress, in order
	delivering bool                       // a goroutine is calling onProgress
	finished   bool                       // the call is returning: nothing more is queued
	delivered  sync.WaitGroup             // the delivery goroutine
	// tokenBytes holds the client's token, which token points into:
	// written once, before token is set, and never after.
	tokenBytes [tokenSize]byte
}

// progressQueueLimit bounds how far OnProgress may fall behind.
const progressQueueLimit = 1024

// End ends the call's progress (finish) and its contexts.
func (p *Call) End() {
	p.finish()
	if p.cancel != nil {
		p.cancel(nil)
	}
	if p.stop != nil {
		p.stop()
	}
}

// Err is the context's error: context.DeadlineExceeded, not Canceled, when
// it ended for want of progress.
func (p *Call) Err() error {
	err := p.Context.Err()
	if err == context.Canceled {
		if _, ok := context.Cause(p.Context).(*TimeoutError); ok {
			return context.DeadlineExceeded
		}
	}
	return err
}

// NoProgress is the TimeoutError that ended the call, nil if none
// did.
func (p *Call) NoProgress() *TimeoutError {
	if p == nil {
		return nil
	}
	e, _ := context.Cause(p.Context).(*TimeoutError)
	return e
}

func (p *Call) now() int64 { return int64(time.Since(p.start)) }

// Sending is told that an attempt is about to go out: the idle clock starts
// again, as the new request has had no chance to report progress yet.
func (p *Call) Sending() {
	p.last.Store(p.now())
	p.out.Store(true)
	if p.idle > 0 {
		p.reg.watch(p)
	}
}

// Sent is told that the attempt is over: until the next, the call waits
// for a session or a pause, which no progress can come for.
func (p *Call) Sent() { p.out.Store(false) }

// idleFor reports how long the call has had a request out without
// progress, at now; 0 when none is out. Read by the idle clock.
func (p *Call) idleFor(now time.Time) time.Duration {
	if !p.out.Load() {
		return 0
	}
	return now.Sub(p.start) - time.Duration(p.last.Load())
}

// progressed is told of a progress notification for the call, on the
// session's reader: it must not block.
func (p *Call) progressed(n mcp.ProgressNotification) bool {
	p.last.Store(p.now())
	if p.onProgress == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return true
	}
	if len(p.queue) >= progressQueueLimit {
		return false
	}
	p.queue = append(p.queue, n)
	if !p.delivering {
		p.delivering = true
		p.delivered.Add(1)
		go p.deliver()
	}
	return true
}

// deliver calls onProgress with the queued notifications, in order, until
// the queue is empty. What arrived before the call's answer is delivered
// before the call returns.
func (p *Call) deliver() {
	defer p.delivered.Done()
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.queue, p.delivering = nil, false
			p.mu.Unlock()
			return
		}
		n := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.onProgress(n)
	}
}

// finish ends the call's progress: it leaves the registry and its idle
// clock, no notification is queued any more, and once those queued before
// have been delivered, onProgress is called no more.
func (p *Call) finish() {
	p.mu.Lock()
	p.finished = true
	key := p.key
	p.mu.Unlock()
	p.reg.leave(key, p)
	p.delivered.Wait()
}

// useLocked makes own, the token a request already carries, the call's;
// with none, the client's own token for the call, made on first use and
// kept through replays. It returns the client's token ("" when own is
// used).
func (p *Call) useLocked(own any) string {
	if own != nil {
		if key := tokenKey(own); key != p.key {
			p.reg.remove(p.key, p)
			p.key = key
			p.reg.add(key, p)
		}
		return ""
	}
	if p.token == "" {
		p.token = p.reg.newToken(&p.tokenBytes)
		p.key = p.token // a string is its own key (tokenKey)
		p.reg.add(p.key, p)
	}
	return p.token
}

// RewriteRequest is the call's requests' way out (a wire.Rewriter): a
// JSON-RPC request gets the call's progressToken in its params._meta,
// unless it has one of its own, which is then the call's.
func (p *Call) RewriteRequest(req *http.Request) *http.Request {
	body := wire.RequestBody(req)
	if body == nil {
		return req
	}
	out, _ := wire.EditRequest(body, func(e *wire.Edit) {
		if !e.IsRequest() {
			return // a notification, which has no progress
		}
		var own any
		if raw, ok := e.Meta("progressToken"); ok {
			_ = json.Unmarshal(raw, &own)
		}
		p.mu.Lock()
		token := p.useLocked(own)
		p.mu.Unlock()
		if token != "" {
			e.SetMetaString("progressToken", token)
		}
	})
	if out != nil {
		return wire.WithBody(req, out)
	}
	return req
}

// tokenKey is a progress token as the registry keys it: the same for the
// token as sent and as a notification brings it back (a number decodes as
// float64 either way). A string is its own key, as it is (no copy); a
// number's key starts with a NUL, which no token the client makes has.
func tokenKey(token any) string {
	switch t := token.(type) {
	case string:
		return t
	case float64:
		return "\x00n" + strconv.FormatFloat(t, 'g', -1, 64)
	case int:
		return "\x00n" + strconv.Itoa(t)
	case int64:
		return "\x00n" + strconv.FormatInt(t, 10)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return "\x00n" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return fmt.Sprintf("\x00?%v", token)
}

// Registry routes progress notifications to the calls they are
// for, by token, whatever stream or session they come on: in the session
// era every POST of a session and its GET stream share one notification
// channel, so a call's progress may arrive on another call's stream.
//
// A Registry is safe for concurrent use; its zero value is ready.
type Registry struct {
	mu    sync.Mutex // guards calls and the idle clock; a leaf
	calls map[string]*Call
	// The idle clock: one timer for every call governed by progress
	// (rather than a timer per call, two allocations each), set for the
	// first moment one of them may have gone idle too long. idle lists
	// the calls it watches; due is when it fires, zero when it is not set.
	idle  *Call
	timer *time.Timer
	due   time.Time

	next   atomic.Uint64
	prefix atomic.Pointer[string]
}

// tokenSize bounds the tokens the client makes: "resilientmcp-", 12 hex
// digits, "-" and a counter of up to 20 digits.
const tokenSize = 48

// newToken returns a token no other call of this client, nor, but by
// chance, any other client's, has. It is written in buf, which must not
// change while the token is in use: the string is buf's bytes.
func (r *Registry) newToken(buf *[tokenSize]byte) string {
	pre := r.prefix.Load()
	if pre == nil {
		var b [6]byte
		_, _ = rand.Read(b[:])
		s := "resilientmcp-" + hex.EncodeToString(b[:]) + "-"
		r.prefix.CompareAndSwap(nil, &s)
		pre = r.prefix.Load()
	}
	b := strconv.AppendUint(append(buf[:0], *pre...), r.next.Add(1), 10)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (r *Registry) add(key string, p *Call) {
	r.mu.Lock()
	if r.calls == nil {
		r.calls = make(map[string]*Call)
	}
	r.calls[key] = p
	r.mu.Unlock()
}

// remove takes key out of the registry if it is still p's.
func (r *Registry) remove(key string, p *Call) {
	if key == "" {
		return
	}
	r.mu.Lock()
	r.removeLocked(key, p)
	r.mu.Unlock()
}

func (r *Registry) removeLocked(key string, p *Call) {
	if key != "" && r.calls[key] == p {
		delete(r.calls, key)
	}
}

// leave takes p, whose call is ending, out of the registry (key, if not
// "") and off the idle clock.
func (r *Registry) leave(key string, p *Call) {
	if key == "" && p.idle == 0 {
		return
	}
	r.mu.Lock()
	r.removeLocked(key, p)
	r.unwatchLocked(p)
	r.mu.Unlock()
}

// watch puts p, whose request is going out, on the idle clock, and has the
// clock fire by p.idle from now.
func (r *Registry) watch(p *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !p.clocked {
		p.clocked = true
		p.prevIdle, p.nextIdle = nil, r.idle
		if r.idle != nil {
			r.idle.prevIdle = p
		}
		r.idle = p
	}
	due := time.Now().Add(p.idle)
	if !r.due.IsZero() && !due.Before(r.due) {
		return
	}
	r.due = due
	if r.timer == nil {
		r.timer = time.AfterFunc(p.idle, r.tick)
	} else {
		r.timer.Reset(p.idle)
	}
}

// unwatchLocked takes p off the idle clock; the clock stops with its last
// call.
func (r *Registry) unwatchLocked(p *Call) {
	if !p.clocked {
		return
	}
	p.clocked = false
	if p.prevIdle != nil {
		p.prevIdle.nextIdle = p.nextIdle
	} else {
		r.idle = p.nextIdle
	}
	if p.nextIdle != nil {
		p.nextIdle.prevIdle = p.prevIdle
	}
	p.prevIdle, p.nextIdle = nil, nil
	if r.idle == nil && r.timer != nil {
		r.timer.Stop()
		r.due = time.Time{}
	}
}

// tick runs on the idle clock's timer: it ends every call that has had a
// request out for its idle timeout without progress, and sets the timer
// for the first moment another may have.
func (r *Registry) tick() {
	var expired []*Call
	r.mu.Lock()
	now := time.Now()
	r.due = time.Time{}
	wait := time.Duration(-1)
	for p := r.idle; p != nil; p = p.nextIdle {
		if p.Context.Err() != nil {
			continue // ended; it leaves at its end
		}
		since := p.idleFor(now)
		if since >= p.idle {
			expired = append(expired, p)
			continue
		}
		// Not out: at its next send, watch sets the clock for it.
		if w := p.idle - since; p.out.Load() && (wait < 0 || w < wait) {
			wait = w
		}
	}
	if wait >= 0 {
		r.due = now.Add(wait)
		r.timer.Reset(wait)
	}
	r.mu.Unlock()
	for _, p := range expired {
		p.cancel(&TimeoutError{Idle: p.idle})
	}
}

func (r *Registry) lookup(key string) *Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

// Route routes a notifications/progress to its call, if one of the
// registry's calls is waiting for it; on the session's reader, so it must
// not block. It reports false if the call's OnProgress queue was full. A
// nil registry has no calls.
func (r *Registry) Route(n mcp.JSONRPCNotification) bool {
	token, ok := n.Params.AdditionalFields["progressToken"]
	if !ok || token == nil || r == nil {
		return true
	}
	p := r.lookup(tokenKey(token))
	if p == nil {
		return true
	}
	pn := mcp.ProgressNotification{Notification: n.Notification}
	pn.Params.ProgressToken = token
	pn.Params.Progress, _ = n.Params.AdditionalFields["progress"].(float64)
	pn.Params.Total, _ = n.Params.AdditionalFields["total"].(float64)
	pn.Params.Message, _ = n.Params.AdditionalFields["message"].(string)
	return p.progressed(pn)
}

// Follow makes p, a zero Call, the context of a call made with ctx,
// followed by onProgress, and governed, if idle > 0, by its progress: it
// ends when no progress has come for idle while a request is out, and at
// the shorter of ctx's deadline and maxDuration (WithMaxCallDuration). Followed for
// OnProgress only (idle 0), its context is bounded, the caller's bound
// with stop to end it. End p with End.
func (p *Call) Follow(ctx context.Context, stop context.CancelFunc, reg *Registry, idle time.Duration, onProgress func(mcp.ProgressNotification), maxDuration time.Duration) {
	p.reg, p.idle, p.onProgress, p.start = reg, idle, onProgress, time.Now()
	if idle == 0 {
		// Nothing of the client's ends the call, so its context needs no
		// cancelling of its own.
		p.Context, p.stop = ctx, stop
		return
	}
	bounded := ctx
	if d, ok := ctx.Deadline(); !ok || d.After(p.start.Add(maxDuration)) {
		bounded, p.stop = context.WithTimeout(ctx, maxDuration)
	}
	// else the caller's deadline is the shorter bound: no context of our
	// own for it.
	p.Context, p.cancel = context.WithCancelCause(bounded)
}

// Idle is the idle timeout that governs the call; 0 for a call followed
// for OnProgress only.
func (p *Call) Idle() time.Duration { return p.idle }
