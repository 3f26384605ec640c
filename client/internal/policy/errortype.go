package policy

import (
	"context"
	"errors"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
	"github.com/resilientmcp/resilientmcp/internal/autherr"
)

// What the observers are told an attempt's failure was (AttemptEnd's
// ErrorType, and CallEnd's when the call returns the server's answer as
// is). It is the verdict's class, named, so that what observers count is
// what the client decided on: a 404 in the stateless era is the server's
// answer, not an expired session, for both.
const (
	TypeWrongAnswer       = "wrong_answer"       // the answer carried another request's id
	TypeResponseTooLarge  = "response_too_large" // the answer was larger than WithMaxResponseBytes
	TypeDeadlineExceeded  = "deadline_exceeded"  // Caller: the caller's deadline
	TypeCanceled          = "canceled"           // Caller: the caller cancelled
	TypeUnauthorized      = "unauthorized"       // AuthRequired
	TypeInsufficientScope = "insufficient_scope" // AuthRequired: 403 insufficient_scope
	TypeSessionExpired    = "session_expired"    // Expired
	TypeServerError       = "server_error"       // ServerError without a JSON-RPC code mcp-go kept, Rejected
	TypeServerBusy        = "server_busy"        // NotSent: 429, 503
	TypeConnectionError   = "connection_error"   // NotSent, OutcomeUnknown: the connection (or a proxy's) failed, or a bodiless 5xx, 502, 504, 499 said the answer was lost
	TypeBrokenAnswer      = "broken_answer"      // Broken: a 500 with a body, an answer that is not MCP
)

// ErrorType names the failed attempt v for the observers, and gives the
// JSON-RPC code of the server's answer when the name is that code. The
// verdict decides; the attempt's error err and the caller's context's
// error ctxErr only say which kind of the verdict's class it was (which
// context ended, which authorization failed, which JSON-RPC code).
func ErrorType(v Verdict, err, ctxErr error) (errorType string, rpcCode int) {
	switch {
	case v.Corrupt:
		return TypeWrongAnswer, 0
	case errors.Is(v.Cause, wire.ErrResponseTooLarge):
		return TypeResponseTooLarge, 0
	}
	switch v.Class {
	case Caller:
		if errors.Is(ctxErr, context.Canceled) {
			return TypeCanceled, 0
		}
		return TypeDeadlineExceeded, 0
	case AuthRequired:
		if errors.As(err, new(*autherr.InsufficientScopeError)) {
			return TypeInsufficientScope, 0
		}
		return TypeUnauthorized, 0
	case Expired:
		if code, ok := RPCCode(err); ok && v.Renegotiate {
			return strconv.Itoa(code), code
		}
		return TypeSessionExpired, 0
	case ServerError:
		if code, ok := RPCCode(err); ok {
			return strconv.Itoa(code), code
		}
		return TypeServerError, 0
	case Rejected:
		return TypeServerError, 0 // refused by the server or a proxy, with no JSON-RPC error
	case NotSent:
		if v.Busy {
			return TypeServerBusy, 0
		}
		return TypeConnectionError, 0
	case OutcomeUnknown:
		return TypeConnectionError, 0
	}
	return TypeBrokenAnswer, 0
}

// ResentErrorType names an attempt the token layer ended to send the
// request again with a new token: the server refused the token (401) or
// its scope (403).
func ResentErrorType(status int) string {
	if status == 403 {
		return TypeInsufficientScope
	}
	return TypeUnauthorized
}

// rpcErrors are the JSON-RPC errors mcp-go turns into sentinels; an error
// with any other code it keeps only as its message.
var rpcErrors = [...]struct {
	err  error
	code int
}{
	{mcp.ErrParseError, mcp.PARSE_ERROR},
	{mcp.ErrInvalidRequest, mcp.INVALID_REQUEST},
	{mcp.ErrMethodNotFound, mcp.METHOD_NOT_FOUND},
	{mcp.ErrInvalidParams, mcp.INVALID_PARAMS},
	{mcp.ErrInternalError, mcp.INTERNAL_ERROR},
	{mcp.ErrRequestInterrupted, mcp.REQUEST_INTERRUPTED},
	{mcp.ErrResourceNotFound, mcp.RESOURCE_NOT_FOUND},
}

// RPCCode is the JSON-RPC error code of the server's answer err, if mcp-go
// kept it.
func RPCCode(err error) (int, bool) {
	for _, e := range rpcErrors {
		if errors.Is(err, e.err) {
			return e.code, true
		}
	}
	switch {
	case errors.As(err, new(mcp.UnsupportedProtocolVersionError)):
		return mcp.UNSUPPORTED_PROTOCOL_VERSION, true
	case errors.As(err, new(mcp.HeaderMismatchError)):
		return mcp.HEADER_MISMATCH, true
	case errors.As(err, new(mcp.MissingRequiredClientCapabilityError)):
		return mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, true
	case errors.As(err, new(mcp.URLElicitationRequiredError)):
		return mcp.URL_ELICITATION_REQUIRED, true
	}
	return 0, false
}
