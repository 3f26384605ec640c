package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen is the longest name the fleet gives a tool or a prompt: what
// model APIs accept.
const MaxNameLen = 64

// hashLen is the hex digits of the hash a long or colliding name ends in.
const hashLen = 8

// DefaultToolName is the name a server's tool is listed under without
// WithToolName: "<server>__<tool>", each character outside [A-Za-z0-9_-]
// made "_". A name longer than MaxNameLen is cut, and then ends in "_" and
// a hash of the server and the tool (names that collide take that form too:
// see the Fleet's doc).
func DefaultToolName(server, tool string) string {
	return sanitize(server) + "__" + sanitize(tool)
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// hashedName is base cut to fit, then "_" and a hash of the server and the
// tool: unique for every (server, tool), whatever the others are.
func hashedName(base, server, tool string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	h := hex.EncodeToString(sum[:])[:hashLen]
	keep := MaxNameLen - hashLen - 1
	if len(base) > keep {
		base = base[:keep]
	}
	return base + "_" + h
}

// key is one server's item: a tool or a prompt, by its own name.
type key struct{ server, name string }

// assignNames names every key: name(server, item), or the hashed form for
// a name too long, or one two keys share. A key's name depends on the keys
// present, never on their order.
func assignNames(keys []key, name func(server, item string) string) map[string]key {
	base := make(map[key]string, len(keys))
	count := make(map[string]int, len(keys))
	for _, k := range keys {
		n := name(k.server, k.name)
		base[k] = n
		count[n]++
	}
	out := make(map[string]key, len(keys))
	for _, k := range keys {
		n := base[k]
		if len(n) > MaxNameLen || count[n] > 1 {
			n = hashedName(n, k.server, k.name)
		}
		out[n] = k
	}
	return out
}
