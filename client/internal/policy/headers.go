package policy

import "github.com/mark3labs/mcp-go/mcp"

// ParamHeadersRefused decides what follows a tools/call the server refused
// for its headers: JSON-RPC -32020, header mismatch (SEP-2243). The server
// checks a request's headers before it runs it, so the call did not run;
// what it missed is most often the Mcp-Param-* headers of the tool's
// x-mcp-header arguments, which only the tool's definition names, and
// which the client could not send for a tool it had not listed, or had
// listed as it was before a change. So the tools are listed again, and the
// call is sent again once with the headers that listing calls for, if they
// differ from those it was sent with (the client tells). A refusal that
// stands is the server's answer.
func ParamHeadersRefused(code int, resent bool) bool {
	return code == mcp.HEADER_MISMATCH && !resent
}
