// Package toolcall writes a tools/call request's params and reads its
// answer's result without the generic passes mcp-go makes: the client's
// hot path (client/internal/hotpath). It is a leaf: the standard library and
// mcp-go's types only.
//
// The decoder reads the answers servers actually send, in one pass, and
// says "not mine" (false) for anything else, for the caller to hand the
// same bytes to mcp.ParseCallToolResult: an unusual answer is read by
// mcp-go's own parser, never misread by this one. FuzzDecodeResult and the
// answers recorded from real servers (testdata) hold it to giving exactly
// mcp-go's value wherever it answers.
package toolcall

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// DecodeResult reads data, the result of a tools/call answer, into a
// CallToolResult equal to the one mcp.ParseCallToolResult returns for it.
// false: not an answer this decoder reads (an unknown content type, a
// result asking for input, a key in another case or spelt with escapes,
// a duplicate key, a null where mcp-go would keep the zero value...); the
// caller parses data with mcp-go instead. data must be valid JSON, as the
// JSON-RPC envelope's decoder leaves a result: values the decoder skips
// are not validated again.
func DecodeResult(data []byte) (*mcp.CallToolResult, bool) {
	d := decoder{b: data}
	res := new(mcp.CallToolResult)
	if !d.result(res) {
		return nil, false
	}
	return res, true
}

// decoder reads JSON from b at i.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c if it comes next.
func (d *decoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// rawString returns the bytes of the string that comes next, quotes
// included, and whether it holds an escape.
func (d *decoder) rawString() (raw []byte, escaped, ok bool) {
	if !d.next('"') {
		return nil, false, false
	}
	start := d.i - 1
	for d.i < len(d.b) {
		j := bytes.IndexAny(d.b[d.i:], "\"\\")
		if j < 0 {
			return nil, false, false
		}
		d.i += j
		if d.b[d.i] == '"' {
			d.i++
			return d.b[start:d.i], escaped, true
		}
		escaped = true
		d.i += 2 // the backslash and the byte it escapes
	}
	return nil, false, false
}

// key reads an object's key and its colon. A key with an escape or a byte
// outside ASCII is refused: encoding/json matches keys to fields by
// Unicode case folding, which this decoder does not do.
func (d *decoder) key() ([]byte, bool) {
	raw, escaped, ok := d.rawString()
	if !ok || escaped || !d.next(':') {
		return nil, false
	}
	k := raw[1 : len(raw)-1]
	for _, c := range k {
		if c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return k, true
}

// str reads a string value as encoding/json decodes it.
func (d *decoder) str() (string, bool) {
	raw, escaped, ok := d.rawString()
	if !ok {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if !escaped && utf8.Valid(body) {
		return string(body), true
	}
	// Escapes, or bytes encoding/json replaces: its own decoding.
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// value skips the value that comes next and returns its bytes.
func (d *decoder) value() ([]byte, bool) {
	d.ws()
	start := d.i
	if d.i >= len(d.b) {
		return nil, false
	}
	switch d.b[d.i] {
	case '"':
		if _, _, ok := d.rawString(); !ok {
			return nil, false
		}
	case '{', '[':
		depth := 0
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case '"':
				if _, _, ok := d.rawString(); !ok {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			d.i++
			if depth == 0 {
				return d.b[start:d.i], true
			}
		}
		return nil, false
	default:
		for d.i < len(d.b) {
			switch d.b[d.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return d.b[start:d.i], d.i > start
			}
			d.i++
		}
	}
	return d.b[start:d.i], d.i > start
}

// boolean reads true or false; null and anything else are refused.
func (d *decoder) boolean() (bool, bool) {
	v, ok := d.value()
	switch {
	case !ok:
		return false, false
	case string(v) == "true":
		return true, true
	case string(v) == "false":
		return false, true
	}
	return false, false
}

// notNull reads a value that is not null.
func (d *decoder) notNull() ([]byte, bool) {
	v, ok := d.value()
	return v, ok && string(v) != "null"
}

// The keys of a result mcp-go reads, as bits of a set.
const (
	kContent = 1 << iota
	kStructured
	kIsError
	kMeta
	kResultType
	kRefused
)

// field is a key a decoder reads, and its bit in the set of those seen.
type field struct {
	name string
	bit  uint
}

var resultKeys = []field{
	{"content", kContent},
	{"structuredContent", kStructured},
	{"isError", kIsError},
	{"_meta", kMeta},
	{"resultType", kResultType},
	// Read by mcp-go, never by this decoder: a result asking for input.
	{"inputRequests", kRefused},
	{"requestState", kRefused},
}

// lookup finds k among names: its bit, or 0 for a key mcp-go ignores;
// false for a key mcp-go would match to a field only by case folding.
func lookup(names []field, k []byte) (uint, bool) {
	for _, f := range names {
		if string(k) == f.name {
			return f.bit, true
		}
		if foldsTo(k, f.name) {
			return 0, false
		}
	}
	return 0, true
}

// foldsTo reports whether k, ASCII (key's), is name in another case.
func foldsTo(k []byte, name string) bool {
	if len(k) != len(name) {
		return false
	}
	for i := range len(k) {
		a, b := k[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func (d *decoder) result(res *mcp.CallToolResult) bool {
	if !d.next('{') {
		return false
	}
	var seen uint
	if !d.next('}') {
		for {
			k, ok := d.key()
			if !ok {
				return false
			}
			bit, ok := lookup(resultKeys, k)
			if !ok || bit == kRefused || seen&bit != 0 {
				return false
			}
			seen |= bit
			switch bit {
			case kContent:
				if !d.contents(res) {
					return false
				}
			case kStructured:
				v, ok := d.notNull()
				if !ok {
					return false
				}
				res.RawStructuredContent = append(json.RawMessage(nil), v...)
				if json.Unmarshal(v, &res.StructuredContent) != nil {
					return false
				}
			case kIsError:
				if res.IsError, ok = d.boolean(); !ok {
					return false
				}
			case kMeta:
				if !d.meta(&res.Meta) {
					return false
				}
			case kResultType:
				t, ok := d.str()
				if !ok || t != string(mcp.ResultTypeComplete) {
					return false
				}
				res.ResultType = mcp.ResultTypeComplete
			default:
				if _, ok := d.value(); !ok {
					return false
				}
			}
			if d.next('}') {
				break
			}
			if !d.next(',') {
				return false
			}
		}
	}
	d.ws()
	// mcp-go refuses a result without content ("content is missing").
	return d.i == len(d.b) && seen&kContent != 0
}

// meta reads a _meta as mcp-go does (Meta's UnmarshalJSON, into a map).
func (d *decoder) meta(m **mcp.Meta) bool {
	v, ok := d.value()
	return ok && json.Unmarshal(v, m) == nil
}

func (d *decoder) contents(res *mcp.CallToolResult) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true // mcp-go leaves an empty content nil
	}
	for {
		c, ok := d.content()
		if !ok {
			return false
		}
		res.Content = append(res.Content, c)
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// The keys of a content item this decoder reads.
const (
	cType = 1 << iota
	cText
	cData
	cMIME
	cMeta
	cAnnotations
)

var contentKeys = []field{
	{"type", cType},
	{"text", cText},
	{"data", cData},
	{"mimeType", cMIME},
	{"_meta", cMeta},
	{"annotations", cAnnotations},
}

// content reads one content item. Text, image and audio are read here;
// resource links and embedded resources, once their type is known, by
// encoding/json into mcp-go's type, as mcp-go's UnmarshalContent does.
func (d *decoder) content() (mcp.Content, bool) {
	if d.peek() != '{' {
		return nil, false
	}
	start := d.i
	d.i++
	var (
		seen            uint
		typ, text, data string
		mime            string
		meta            *mcp.Meta
		annotations     *mcp.Annotations
		folded          bool // a key that is a known one in another case
	)
	if !d.next('}') {
		for {
			k, ok := d.key()
			if !ok {
				return nil, false
			}
			bit, exact := lookup(contentKeys, k)
			if !exact {
				folded = true
			}
			if seen&bit != 0 {
				return nil, false
			}
			seen |= bit
			switch bit {
			case cType:
				typ, ok = d.str()
			case cText:
				text, ok = d.str()
			case cData:
				data, ok = d.str()
			case cMIME:
				mime, ok = d.str()
			case cMeta:
				ok = d.meta(&meta)
			case cAnnotations:
				var v []byte
				if v, ok = d.value(); ok {
					ok = json.Unmarshal(v, &annotations) == nil
				}
			default: // a key no content type has, which mcp-go ignores too
				_, ok = d.value()
			}
			if !ok {
				return nil, false
			}
			if d.next('}') {
				break
			}
			if !d.next(',') {
				return nil, false
			}
		}
	}
	item := d.b[start:d.i]
	if seen&cType == 0 || folded {
		return nil, false
	}
	annotated := mcp.Annotated{Annotations: annotations}
	switch typ {
	case mcp.ContentTypeText:
		if seen&cText == 0 {
			return nil, false
		}
		return mcp.TextContent{Annotated: annotated, Meta: meta, Type: typ, Text: text}, true
	case mcp.ContentTypeImage, mcp.ContentTypeAudio:
		if seen&(cData|cMIME) != cData|cMIME {
			return nil, false
		}
		if typ == mcp.ContentTypeImage {
			return mcp.ImageContent{Annotated: annotated, Meta: meta, Type: typ, Data: data, MIMEType: mime}, true
		}
		return mcp.AudioContent{Annotated: annotated, Meta: meta, Type: typ, Data: data, MIMEType: mime}, true
	case mcp.ContentTypeLink:
		var c mcp.ResourceLink
		if json.Unmarshal(item, &c) != nil {
			return nil, false
		}
		return c, true
	case mcp.ContentTypeResource:
		var c mcp.EmbeddedResource
		if json.Unmarshal(item, &c) != nil {
			return nil, false
		}
		return c, true
	}
	return nil, false
}
