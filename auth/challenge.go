package auth

import (
	"net/http"
	"strings"
)

// Challenge is what a server's WWW-Authenticate Bearer challenge (or, from
// a server that takes DPoP-bound tokens only, its DPoP challenge) says
// (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1): where its protected
// resource metadata is, which scope it wants, and why it refused.
type Challenge struct {
	ResourceMetadata string   // RFC 9728 resource_metadata URL, "" if none
	Scopes           []string // the scope parameter, split on spaces
	Error            string   // e.g. "invalid_token", "insufficient_scope"
}

// ParseChallenge reads the Bearer challenge of h's WWW-Authenticate
// headers, else their DPoP challenge; headers without either give the
// zero Challenge.
func ParseChallenge(h http.Header) Challenge {
	var ch Challenge
	for _, scheme := range []string{"bearer", "dpop"} {
		for _, v := range h.Values("WWW-Authenticate") {
			params, ok := schemeParams(v, scheme)
			if !ok {
				continue
			}
			ch.ResourceMetadata = params["resource_metadata"]
			ch.Scopes = strings.Fields(params["scope"])
			ch.Error = params["error"]
			return ch
		}
	}
	return ch
}

// schemeParams parses `Scheme k="v", k2=v2` into its parameters; scheme
// is lower-case. It tolerates what servers send in practice: other
// schemes before it in one header, unquoted values, and escaped quotes.
func schemeParams(v, scheme string) (map[string]string, bool) {
	rest, found := "", false
	for i := 0; i+len(scheme) <= len(v) && !found; i++ {
		end := i + len(scheme)
		// The scheme's name as a token of its own, not within a value
		// (a URL may hold "bearer" or "dpop").
		if strings.EqualFold(v[i:end], scheme) && (i == 0 || v[i-1] == ' ' || v[i-1] == ',') && (end == len(v) || v[end] == ' ' || v[end] == ',') {
			rest, found = v[end:], true
		}
	}
	if !found {
		return nil, false
	}
	params := map[string]string{}
	for {
		rest = strings.TrimLeft(rest, " ,\t")
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return params, true
		}
		key := strings.ToLower(strings.TrimSpace(rest[:eq]))
		if strings.ContainsAny(key, " \t") {
			return params, true // the next scheme's name: our parameters ended
		}
		rest = strings.TrimLeft(rest[eq+1:], " \t")
		var val string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			j := 1
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
				}
				b.WriteByte(rest[j])
			}
			val, rest = b.String(), rest[min(j+1, len(rest)):]
		} else {
			end := strings.IndexAny(rest, ", \t")
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		if _, dup := params[key]; !dup {
			params[key] = val
		}
	}
}
