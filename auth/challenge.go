package auth

import (
	"net/http"
	"strings"
)

// Challenge is what a server's WWW-Authenticate Bearer challenge says
// (RFC 6750 §3, RFC 9728 §5.1): where its protected resource metadata is,
// which scope it wants, and why it refused.
type Challenge struct {
	ResourceMetadata string   // RFC 9728 resource_metadata URL, "" if none
	Scopes           []string // the scope parameter, split on spaces
	Error            string   // e.g. "invalid_token", "insufficient_scope"
}

// ParseChallenge reads the Bearer challenge of h's WWW-Authenticate
// headers; a header without one gives the zero Challenge.
func ParseChallenge(h http.Header) Challenge {
	var ch Challenge
	for _, v := range h.Values("WWW-Authenticate") {
		params, ok := bearerParams(v)
		if !ok {
			continue
		}
		ch.ResourceMetadata = params["resource_metadata"]
		ch.Scopes = strings.Fields(params["scope"])
		ch.Error = params["error"]
		return ch
	}
	return ch
}

// bearerParams parses `Bearer k="v", k2=v2` into its parameters. It
// tolerates what servers send in practice: other schemes before Bearer in
// one header, unquoted values, and escaped quotes.
func bearerParams(v string) (map[string]string, bool) {
	i := indexFold(v, "bearer")
	if i < 0 || (i > 0 && v[i-1] != ' ' && v[i-1] != ',') {
		return nil, false
	}
	rest := v[i+len("bearer"):]
	if rest != "" && rest[0] != ' ' && rest[0] != ',' {
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

func indexFold(s, sub string) int {
	return strings.Index(strings.ToLower(s), sub)
}
