package toolcall

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// The keys of a JSON-RPC response mcp-go reads.
const (
	rJSONRPC = 1 << iota
	rID
	rResult
	rError
)

var responseKeys = []field{
	{"jsonrpc", rJSONRPC},
	{"id", rID},
	{"result", rResult},
	{"error", rError},
}

// DecodeResponse reads body, a JSON-RPC answer to a tools/call, in one
// pass into the CallToolResult mcp-go's transport and parser make of it;
// false: not an answer this decoder reads (an error, no id, not valid
// JSON, trailing bytes, a result DecodeResult leaves to mcp-go...), for
// mcp-go to read instead.
func DecodeResponse(body []byte) (*mcp.CallToolResult, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	d := decoder{b: body}
	if !d.next('{') {
		return nil, false
	}
	var seen uint
	var res *mcp.CallToolResult
	for !d.next('}') {
		if seen != 0 && !d.next(',') {
			return nil, false
		}
		k, ok := d.key()
		if !ok {
			return nil, false
		}
		bit, ok := lookup(responseKeys, k)
		if !ok || bit == rError || bit != 0 && seen&bit != 0 {
			return nil, false
		}
		seen |= bit | 1<<8 // the high bit: a member was read
		switch bit {
		case rJSONRPC:
			if d.peek() != '"' {
				return nil, false
			}
			_, ok = d.value()
		case rID:
			// A number or a string: mcp-go takes null for no id, and fails
			// on anything else.
			if c := d.peek(); c == 'n' || c == '{' || c == '[' || c == 't' || c == 'f' {
				return nil, false
			}
			_, ok = d.value()
		case rResult:
			var v []byte
			if v, ok = d.value(); ok {
				res, ok = DecodeResult(v)
			}
		default:
			_, ok = d.value()
		}
		if !ok {
			return nil, false
		}
	}
	d.ws()
	if d.i != len(d.b) || seen&(rID|rResult) != rID|rResult {
		return nil, false
	}
	return res, true
}
