package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Resolver gives the value of a reference of a scheme the fleet does not
// know itself: ${input:id} (VS Code's inputs), ${op://vault/item/field}, and
// any other "${scheme:ref}". ref is what follows "scheme:" ("id", or
// "//vault/item/field"). An error fails the server whose config holds the
// reference. It may be called from several goroutines at once (one per
// server), and must be safe for that.
type Resolver func(ctx context.Context, scheme, ref string) (string, error)

// errNoResolver is a reference to a scheme with no WithResolver.
var errNoResolver = errors.New("no resolver (fleet.WithResolver) for this scheme")

// MissingVariableError is a variable a config refers to that is not set,
// with no default. A plain value.
type MissingVariableError struct {
	Variable string
}

func (e *MissingVariableError) Error() string {
	return fmt.Sprintf("variable %s is not set and has no default", e.Variable)
}

// expander expands the references in a config's strings. lookup is the
// environment (os.LookupEnv); resolve, if nil, leaves every other scheme's
// reference as written (Parse's check, before a resolver can be asked).
type expander struct {
	ctx     context.Context
	lookup  func(string) (string, bool)
	resolve Resolver
	// deferOthers: with no resolver, keep other schemes' references as they
	// are rather than fail (Parse and New check; Start resolves).
	deferOthers bool
}

func envExpander() *expander {
	return &expander{ctx: context.Background(), lookup: os.LookupEnv, deferOthers: true}
}

// expand replaces each ${...} in s. The forms:
//
//	${NAME} ${env:NAME}             the variable; unset is an error
//	${NAME:-default}                the variable if set and non-empty, else default
//	${env:NAME | value:literal}     SEP-2633: the first part that gives a non-empty value
//	${scheme:ref}                   the resolver's (input:, op:, ...)
func (x *expander) expand(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", redactRefs(s[i:]))
		}
		ref := s[i+2 : i+end]
		v, err := x.one(ref)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// one is the value of one reference, the text between ${ and }.
func (x *expander) one(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", errors.New("empty ${}")
	}
	if strings.Contains(ref, "|") {
		var missing []string
		for part := range strings.SplitSeq(ref, "|") {
			part = strings.TrimSpace(part)
			scheme, rest, ok := strings.Cut(part, ":")
			if !ok {
				scheme, rest = "env", part
			}
			switch scheme {
			case "value":
				if rest != "" {
					return rest, nil
				}
			case "env":
				if v, ok := x.lookup(rest); ok && v != "" {
					return v, nil
				}
				missing = append(missing, rest)
			default:
				v, err := x.other(part, scheme, rest)
				if err != nil {
					return "", err
				}
				if v != "" {
					return v, nil
				}
			}
		}
		return "", &MissingVariableError{Variable: strings.Join(missing, ", ")}
	}
	if name, def, ok := strings.Cut(ref, ":-"); ok && isName(name) {
		if v, ok := x.lookup(name); ok && v != "" {
			return v, nil
		}
		return def, nil
	}
	name := ref
	if n, ok := strings.CutPrefix(ref, "env:"); ok {
		name = n
	} else if scheme, rest, ok := strings.Cut(ref, ":"); ok {
		return x.other(ref, scheme, rest)
	}
	if !isName(name) {
		return "", fmt.Errorf("${%s}: not a variable name", name)
	}
	v, ok := x.lookup(name)
	if !ok {
		return "", &MissingVariableError{Variable: name}
	}
	return v, nil
}

// other is a reference for the resolver.
func (x *expander) other(whole, scheme, ref string) (string, error) {
	if x.resolve == nil {
		if x.deferOthers {
			return "${" + whole + "}", nil
		}
		return "", fmt.Errorf("${%s}: %w", whole, errNoResolver)
	}
	v, err := x.resolve(x.ctx, scheme, ref)
	if err != nil {
		return "", fmt.Errorf("${%s}: %w", whole, err)
	}
	return v, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// redactRefs keeps an error about a malformed reference from quoting more
// than its first few characters.
func redactRefs(s string) string {
	if len(s) > 12 {
		return s[:12] + "..."
	}
	return s
}

var envLookup = os.LookupEnv
