package wire

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// This file is the one way the client edits the JSON of a request it
// sends: the observers' trace context and the call's progressToken in
// params._meta, the stateless era's per-request _meta (the tasks
// extension, the protocol version, elicitation's applyDefaults), and the
// initialize request's capabilities. The edits are spliced into the bytes
// as written (Members finds where each member lies), so that everything
// else (mcp-go's field order, the caller's own _meta, the arguments) is
// sent byte for byte, and a request costs no decoding into maps.

// Edit is the edit of one request's params, given to the edit function of
// EditRequest or EditParams: it reads the params and their _meta as the
// request has them, and collects what to set. The edits are applied when
// the function returns, all or none. An Edit is valid only during that
// call, and is not safe for concurrent use.
type Edit struct {
	msg, params, meta []byte // the message (EditRequest only), its params and their _meta as written; nil if absent
	// The members of its params and of their _meta, each where it lies in
	// its own object; the arrays spare a request's members an allocation.
	ps, ms           []member
	psBuf            [8]member
	msBuf            [4]member
	topMembers       int  // how many members the message has
	paramsStart      int  // where params lie in msg
	hasID, hasMethod bool // the message has an id (a request), a method
	// paramsOK: params are absent, null or an object. metaOK: _meta is
	// absent, null or an object.
	paramsOK, metaOK bool

	setParams, setMeta []setting
	setBuf             [4]setting
}

// member is one member of a JSON object: its key as written between the
// quotes, and where its value lies in the object.
type member struct {
	key        []byte
	start, end int
}

// setting is one member to set: its value raw JSON, or a string to quote.
type setting struct {
	key   string
	raw   []byte
	str   string
	isStr bool
}

// IsRequest reports whether the message is a JSON-RPC request: it has an
// id (a notification has none). False in EditParams, which sees no
// message.
func (e *Edit) IsRequest() bool { return e.hasID }

// Param is the value of the params member key as written (the last one,
// as a decoder takes it), and whether there is one.
func (e *Edit) Param(key string) (json.RawMessage, bool) {
	return lookup(e.params, e.ps, key)
}

// Meta is the value of the entry key of params._meta as written (the last
// one), and whether there is one.
func (e *Edit) Meta(key string) (json.RawMessage, bool) {
	return lookup(e.meta, e.ms, key)
}

// SetParam sets the params member key to value, which must be valid JSON:
// in place of the last member of that key, else added after the others.
// The key "_meta" is ignored: its entries are set with SetMeta.
func (e *Edit) SetParam(key string, value json.RawMessage) {
	if key == "_meta" {
		return
	}
	e.setParams = set(e.setParams, setting{key: key, raw: value})
}

// SetMeta sets the entry key of params._meta to value, which must be valid
// JSON: in place of the last entry of that key, else added before the
// others. A request whose _meta is not an object (nor null) is then left
// as it is.
func (e *Edit) SetMeta(key string, value json.RawMessage) {
	e.setMeta = set(e.setMeta, setting{key: key, raw: value})
}

// SetMetaString is SetMeta with the JSON string of value, quoted as it is
// spliced in.
func (e *Edit) SetMetaString(key, value string) {
	e.setMeta = set(e.setMeta, setting{key: key, str: value, isStr: true})
}

func set(s []setting, v setting) []setting {
	for i := range s {
		if s[i].key == v.key {
			s[i] = v // the last one wins
			return s
		}
	}
	return append(s, v)
}

// EditRequest edits the params of body, one JSON-RPC request or
// notification as a client sends it (json.Valid, one object): it calls
// edit with them, and returns the message with what edit set spliced in,
// every other byte as it was. out is nil if body is not such a message
// (edit is not called), if edit set nothing, or if the message cannot
// carry what it set (params by position, a _meta that is not an object).
// id is the message's id as text, a string unquoted ("" for a
// notification, a null id or a body that is not one object), and is
// returned whether or not the message is edited: a response has one too.
func EditRequest(body []byte, edit func(*Edit)) (out []byte, id string) {
	if !json.Valid(body) {
		return nil, ""
	}
	e := &Edit{msg: body}
	var params, idAt [2]int // where they lie in body
	found := false
	if !Members(body, func(key []byte, start, end int) {
		e.topMembers++
		switch string(key) {
		case "method":
			e.hasMethod = true
		case "params":
			params, found = [2]int{start, end}, true
		case "id":
			e.hasID = true
			idAt = [2]int{start, end}
		}
	}) {
		return nil, ""
	}
	if e.hasID {
		id = scalar(body[idAt[0]:idAt[1]])
	}
	if !e.hasMethod {
		return nil, id
	}
	if found {
		e.params, e.paramsStart = body[params[0]:params[1]], params[0]
	}
	e.read()
	edit(e)
	return e.apply(), id
}

// EditParams is EditRequest for the params of a request alone, for a
// request whose message mcp-go writes: params is the JSON of the params
// object (nil or null for none). It returns the params with what edit set,
// nil if params are not an object, null or absent, if edit set nothing, or
// if they cannot carry it.
func EditParams(params []byte, edit func(*Edit)) []byte {
	params = bytes.TrimSpace(params)
	if len(params) > 0 && !json.Valid(params) {
		return nil
	}
	e := &Edit{params: params}
	e.read()
	edit(e)
	return e.apply()
}

// read finds the members of the params and of their _meta.
func (e *Edit) read() {
	e.ps, e.ms = e.psBuf[:0], e.msBuf[:0]
	e.setParams, e.setMeta = e.setBuf[:0:2], e.setBuf[2:2]
	if len(e.params) == 0 || string(e.params) == "null" {
		e.paramsOK, e.metaOK = true, true
		return
	}
	if !members(e.params, &e.ps) {
		return // by position, or not JSON-RPC's
	}
	e.paramsOK, e.metaOK = true, true
	i := lastIndex(e.ps, "_meta")
	if i < 0 {
		return
	}
	e.meta = e.params[e.ps[i].start:e.ps[i].end]
	if string(e.meta) != "null" && !members(e.meta, &e.ms) {
		e.metaOK = false
		e.ms = e.ms[:0]
	}
}

// splice is one change to the bytes: [start, end) replaced with what write
// writes (an insertion where start == end).
type splice struct {
	start, end int
	write      func(e *Edit, b []byte) []byte
	s          *setting // the value of a replaced member
}

// apply returns the message (or the params alone) with the settings
// spliced in, nil if there are none or they cannot be made.
func (e *Edit) apply() []byte {
	if len(e.setParams) == 0 && len(e.setMeta) == 0 {
		return nil
	}
	if !e.paramsOK || len(e.setMeta) > 0 && !e.metaOK {
		return nil
	}
	// base is where the params lie in whole, what is returned edited.
	base, whole := e.paramsStart, e.msg
	if whole == nil {
		base, whole = 0, e.params
	}
	var buf [8]splice
	sp := buf[:0]
	switch {
	case e.params == nil && e.msg != nil:
		// A "params" member before the message's closing '}'; only
		// whitespace follows it.
		at := bytes.LastIndexByte(e.msg, '}')
		sp = append(sp, splice{start: at, end: at, write: (*Edit).writeParamsMember})
	case len(e.params) == 0 || string(e.params) == "null":
		sp = append(sp, splice{start: base, end: base + len(e.params), write: (*Edit).writeParams})
	default:
		newMeta, newParams := false, false
		for i := range e.setParams {
			s := &e.setParams[i]
			if j := lastIndex(e.ps, s.key); j >= 0 {
				sp = append(sp, splice{start: base + e.ps[j].start, end: base + e.ps[j].end, s: s})
			} else {
				newParams = true
			}
		}
		metaAt := -1 // where the _meta value lies in whole
		if e.meta != nil {
			metaAt = base + e.ps[lastIndex(e.ps, "_meta")].start
		}
		for i := range e.setMeta {
			s := &e.setMeta[i]
			if j := lastIndex(e.ms, s.key); j >= 0 {
				sp = append(sp, splice{start: metaAt + e.ms[j].start, end: metaAt + e.ms[j].end, s: s})
			} else {
				newMeta = true
			}
		}
		switch {
		case !newMeta:
		case e.meta == nil: // after the params' '{'
			at := base + 1
			sp = append(sp, splice{start: at, end: at, write: (*Edit).writeMetaMember})
		case string(e.meta) == "null":
			sp = append(sp, splice{start: metaAt, end: metaAt + len(e.meta), write: (*Edit).writeMetaObject})
		default: // after the _meta's '{'
			at := metaAt + 1
			sp = append(sp, splice{start: at, end: at, write: (*Edit).writeMetaEntries})
		}
		if newParams { // before the params' '}'
			at := base + len(e.params) - 1
			sp = append(sp, splice{start: at, end: at, write: (*Edit).writeNewParams})
		}
	}
	// In order; insertions at one place keep the order they were made in
	// (a new _meta before new params in empty params).
	slices.SortStableFunc(sp, func(a, b splice) int { return a.start - b.start })
	n := len(whole) + 32
	for _, ss := range [][]setting{e.setParams, e.setMeta} {
		for _, s := range ss {
			n += len(s.key) + len(s.raw) + len(s.str) + 4
		}
	}
	out := make([]byte, 0, n)
	at := 0
	for _, s := range sp {
		out = append(out, whole[at:s.start]...)
		if s.s != nil {
			out = s.s.appendValue(out)
		} else {
			out = s.write(e, out)
		}
		at = s.end
	}
	return append(out, whole[at:]...)
}

// writeParamsMember writes a "params" member of the settings alone, for a
// message without one.
func (e *Edit) writeParamsMember(b []byte) []byte {
	if e.topMembers > 0 {
		b = append(b, ',')
	}
	b = append(b, `"params":`...)
	return e.writeParams(b)
}

// writeParams writes a params object of the settings alone.
func (e *Edit) writeParams(b []byte) []byte {
	b = append(b, '{')
	if len(e.setMeta) > 0 {
		b = append(b, `"_meta":`...)
		b = e.writeMetaObject(b)
		if len(e.setParams) > 0 {
			b = append(b, ',')
		}
	}
	b = appendNew(b, e.setParams, nil)
	return append(b, '}')
}

// writeMetaMember writes a "_meta" member of the new entries, for params
// without one, after their '{': followed by a ',' if they have members.
func (e *Edit) writeMetaMember(b []byte) []byte {
	b = append(b, `"_meta":`...)
	b = e.writeMetaObject(b)
	if len(e.ps) > 0 {
		b = append(b, ',')
	}
	return b
}

// writeMetaObject writes a _meta object of the new entries.
func (e *Edit) writeMetaObject(b []byte) []byte {
	b = append(b, '{')
	b = appendNew(b, e.setMeta, e.ms)
	return append(b, '}')
}

// writeMetaEntries writes the new entries of an existing _meta, after its
// '{': followed by a ',' if it has entries of its own.
func (e *Edit) writeMetaEntries(b []byte) []byte {
	b = appendNew(b, e.setMeta, e.ms)
	if len(e.ms) > 0 {
		b = append(b, ',')
	}
	return b
}

// writeNewParams writes the new params members before the params' closing
// '}', after a ',' if the params have members or a new _meta.
func (e *Edit) writeNewParams(b []byte) []byte {
	if len(e.ps) > 0 || len(e.setMeta) > 0 && e.meta == nil {
		b = append(b, ',')
	}
	return appendNew(b, e.setParams, e.ps)
}

// appendNew appends the settings whose key is not among ms, as members
// separated by commas.
func appendNew(b []byte, ss []setting, ms []member) []byte {
	first := true
	for i := range ss {
		if lastIndex(ms, ss[i].key) >= 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, ss[i].key)
		b = append(b, ':')
		b = ss[i].appendValue(b)
	}
	return b
}

func (s *setting) appendValue(b []byte) []byte {
	if s.isStr {
		return appendString(b, s.str)
	}
	return append(b, s.raw...)
}

// members appends the members of the JSON object obj to *ms; false if obj
// is not one (Members).
func members(obj []byte, ms *[]member) bool {
	return Members(obj, func(key []byte, start, end int) {
		*ms = append(*ms, member{key: key, start: start, end: end})
	})
}

// lastIndex is the index of the last member with key, -1 if none.
func lastIndex(ms []member, key string) int {
	for i := len(ms) - 1; i >= 0; i-- {
		if string(ms[i].key) == key {
			return i
		}
	}
	return -1
}

func lookup(obj []byte, ms []member, key string) (json.RawMessage, bool) {
	if i := lastIndex(ms, key); i >= 0 {
		return json.RawMessage(obj[ms[i].start:ms[i].end]), true
	}
	return nil, false
}

// scalar is a JSON-RPC id as text: a number as written, a string
// unquoted; "" for null or anything else.
func scalar(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case c == '-' || c >= '0' && c <= '9':
		return string(raw)
	}
	return ""
}

// appendString appends s as a JSON string: as it is between quotes when
// it needs no escape (a trace context, a progress token), else as
// encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// ObjectFields decodes v, a value or raw JSON, as a JSON object.
func ObjectFields(v any) (map[string]json.RawMessage, bool) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, false
		}
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, false
	}
	return fields, true
}
