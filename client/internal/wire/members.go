package wire

import "bytes"

// This file is the jsonScanner for a message held whole rather than
// streaming past: the client's edits of a request's body (the observers'
// params._meta, the call's progressToken) need to know where each member
// of an object lies, which the guard's scanner, keeping nothing of what it
// reads, does not say. The walk over the object's own keys is here; every
// value is skipped as the guard skips it, strings with stringEnd and
// objects and arrays with the scanner's nested (scan.go), so that the
// client has one way of walking JSON's strings, escapes and brackets, and
// it is linear on any bytes.

// Members calls yield with each member of obj, a JSON object with only
// whitespace around it, in order: its key as written between the quotes,
// and where its value lies in obj (obj[start:end]). It reports false if
// obj is not such an object, or if a key is written with escapes (which
// mcp-go never writes: such a message is left to a real decoder); yield
// may have been called for the members before the failure. obj must be
// valid JSON (json.Valid): Members only finds where things are, and checks
// no more than it needs to, without encoding/json's allocations.
func Members(obj []byte, yield func(key []byte, start, end int)) bool {
	i := skipSpaces(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpaces(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return skipSpaces(obj, i+1) == len(obj)
	}
	for i < len(obj) && obj[i] == '"' {
		keyEnd := valueEnd(obj, i)
		if keyEnd < 0 {
			return false
		}
		key := obj[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpaces(obj, keyEnd)
		if i >= len(obj) || obj[i] != ':' {
			return false
		}
		start := skipSpaces(obj, i+1)
		end := valueEnd(obj, start)
		if end < 0 {
			return false
		}
		yield(key, start, end)
		i = skipSpaces(obj, end)
		switch {
		case i < len(obj) && obj[i] == ',':
			i = skipSpaces(obj, i+1)
		case i < len(obj) && obj[i] == '}':
			return skipSpaces(obj, i+1) == len(obj)
		default:
			return false
		}
	}
	return false
}

func skipSpaces(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// valueEnd returns the index after the value that starts at b[i], or -1 if
// it does not end within b.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		j, _ := stringEnd(b[i+1:], false)
		if j < 0 {
			return -1
		}
		return i + 1 + j + 1
	case '{', '[':
		s := jsonScanner{phase: phNested, depth: 1}
		if i+1 == len(b) {
			return -1
		}
		j := s.nested(b, i+1)
		if s.phase != phAfter {
			return -1 // still inside at the end of b
		}
		return j + 1
	}
	j := i // a number, true, false, null
	for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}
