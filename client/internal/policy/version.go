package policy

import (
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
)

// VersionRefused decides what follows a server's refusal of the protocol
// version a request declared: JSON-RPC -32022 with the versions it
// supports (SEP-2575; a 2026-07-28 server answers it with 400). The server
// refused the request before running it, so it did not run: it is sent
// again, once (resent says whether this request was already), with the
// newest version both sides speak, known being the client's versions, newest
// first (mcp.ValidProtocolVersions).
//
// Only within the era of the version refused: a server of the stateless
// era (2026-07-28 and later) that refuses one of its versions is no reason
// to go back to initialize, and the session era negotiates in initialize,
// where a refusal is Classify's Renegotiate. ok is false when no version
// of that era is shared, or the request was sent again already: the
// refusal then stands.
//
// The version may be the one refused: a server that lists it has refused
// it this once (a replica rolled back and forward, say), and one resend
// finds out.
func VersionRefused(sent string, supported, known []string, resent bool) (version string, ok bool) {
	if resent || !mcp.IsModernProtocol(sent) {
		return "", false
	}
	for _, v := range known {
		if mcp.IsModernProtocol(v) && slices.Contains(supported, v) {
			return v, true
		}
	}
	return "", false
}

// StatelessEraRefusal reports whether a server that refused a protocol
// version and listed supported speaks the stateless era: then the session
// era's initialize is not the way on (F44), whatever becomes of the request.
func StatelessEraRefusal(supported []string) bool {
	return slices.ContainsFunc(supported, mcp.IsModernProtocol)
}
