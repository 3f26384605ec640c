package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// This file keeps a hostile or broken server from handing a caller the wrong
// answer and from spending the client's memory. It works at the HTTP
// boundary (the tracker's RoundTripper), below mcp-go, so every method and
// every session is covered alike: mcp-go returns whatever answer comes back
// on a request's connection without comparing ids, and reads a body of any
// size into memory.
//
// What mcp-go does with an answer is mirrored here precisely, not
// approximately: a JSON body is decoded with json.Decoder, an SSE event is
// cut into lines with bufio.Reader.ReadString('\n') (sse.go cuts a stream
// where it does) and its data decoded with json.Unmarshal, and ids are
// matched as encoding/json matches struct fields. Where the guard finds no object to check (not JSON, not an
// object), it lets the answer through, and mcp-go fails to decode it too;
// where mcp-go would fail anyway, the guard may refuse first. FuzzGuardJSON
// and FuzzGuardSSE hold it to that.

// ErrResponseTooLarge is the client's ErrResponseTooLarge (its doc says
// what it means); it is declared here, where answers are measured.
var ErrResponseTooLarge = errors.New("resilientmcp: response too large")

// DefaultMaxResponseBytes is WithMaxResponseBytes's default: four times
// gRPC's default receive limit, since MCP answers carry whole documents and
// images.
const DefaultMaxResponseBytes = 16 << 20

// responseTooLargeError is the failure of an answer over the limit.
type responseTooLargeError struct {
	limit int64
	event bool // one event of an SSE stream, rather than a whole body
}

func (e *responseTooLargeError) Error() string {
	what := "response body"
	if e.event {
		what = "event of the response stream"
	}
	return fmt.Sprintf("resilientmcp: %s larger than the limit of %d bytes (WithMaxResponseBytes); the connection was dropped", what, e.limit)
}

func (e *responseTooLargeError) Is(target error) bool { return target == ErrResponseTooLarge }

// WrongAnswerError is the failure of an answer that carries another
// request's id: the session (or something between us and the server) mixes
// up answers, and nothing more it says can be trusted.
type WrongAnswerError struct{ Got, Want string }

func (e *WrongAnswerError) Error() string {
	return fmt.Sprintf("resilientmcp: the server answered another request (response id %s, request id %s); the session is discarded", e.Got, e.Want)
}

// maxIDLen bounds the id the guard keeps of an answer: mcp-go's are
// integers. A longer one is treated as not ours.
const maxIDLen = 64

// idToken is a JSON-RPC id as it appeared on the wire: a number or a quoted
// string.
type idToken struct {
	b [maxIDLen]byte
	n uint8
}

func (t *idToken) bytes() []byte { return t.b[:t.n] }

// sameID reports whether an answer's id is the request's, as mcp-go would
// compare them after decoding: 1 and 1.0 are the same id, 1 and "1" are not.
// Byte equality answers almost always, without decoding.
func sameID(want, got []byte) bool {
	if bytes.Equal(want, got) {
		return true
	}
	var a, b mcp.RequestId
	if a.UnmarshalJSON(want) != nil || b.UnmarshalJSON(got) != nil || a.IsNil() {
		return false
	}
	return a.Value() == b.Value()
}

// The kinds of id a scanned object carries.
const (
	idAbsent   = iota // no "id" member
	idNull            // "id": null, which mcp-go takes for no id
	idScalar          // a number or a string: compare it
	idUnusable        // an object, an array, or longer than maxIDLen: not ours
)

// Where a jsonScanner is in the top-level value.
const (
	phBefore   = iota // before it
	phFirstKey        // after '{': a key or '}'
	phKey             // after ',': a key
	phInKey           // in a key
	phColon           // after a key
	phValue           // after ':'
	phString          // in a member's string value
	phScalar          // in a member's number, true, false or null
	phNested          // in a member's object or array
	phAfter           // after a member's value: ',' or '}'
	phDone            // the top-level object has ended
	phOff             // not an object, or not JSON: nothing to find
)

// jsonScanner follows one JSON value as it streams past, tracking just
// enough to find the top-level members mcp-go reads to route an answer: the
// "id", matched case-insensitively with the last of duplicates winning (as
// encoding/json fills a struct field), and whether there is a "method" key
// (as mcp-go looks one up in a map). It does not validate: a value that is
// not valid JSON fails to decode in mcp-go too, so the scanner may give up
// on it (phOff) or conclude anything. It keeps no input and allocates
// nothing.
type jsonScanner struct {
	phase  uint8
	esc    bool  // after a backslash in a string
	str    bool  // in a string inside a nested value
	hex    uint8 // \u digits of a key still to read
	r      rune  // the \u escape being read
	depth  int32 // brackets open in a nested value
	keyLen uint8
	keyBad bool // the key is too long, or has a rune no name can fold to
	key    [24]byte

	isID        bool // the current member's key is "id"
	isMethod    bool // the current member's key folds to "method"
	method      bool // a member's key is exactly "method"
	methodBad   bool // a "method" member has a value mcp-go cannot decode as a string
	idKind      uint8
	idComplete  bool // the last "id" member's value has ended
	idLen       uint8
	id          [maxIDLen]byte
	idTruncated bool
}

var (
	nameID     = []byte("id")
	nameMethod = []byte("method")
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// ended reports whether the top-level object has ended.
func (s *jsonScanner) ended() bool { return s.phase == phDone }

// write scans p, the next bytes of the value.
func (s *jsonScanner) write(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch s.phase {
		case phBefore:
			switch {
			case isSpace(c):
			case c == '{':
				s.phase = phFirstKey
			default:
				s.phase = phOff
			}
		case phFirstKey, phKey:
			switch {
			case isSpace(c):
			case c == '"':
				s.phase, s.keyLen, s.keyBad, s.esc, s.hex = phInKey, 0, false, false, 0
			case c == '}' && s.phase == phFirstKey:
				s.phase = phDone
			default:
				s.phase = phOff
			}
		case phInKey:
			s.keyByte(c)
		case phColon:
			switch {
			case isSpace(c):
			case c == ':':
				s.phase = phValue
			default:
				s.phase = phOff
			}
		case phValue:
			if !isSpace(c) {
				s.startValue(c)
			}
		case phString:
			if !s.isID {
				// Skip to the quote that ends the string: the bulk of an
				// answer is strings.
				j, esc := stringEnd(p[i:], s.esc)
				if j < 0 {
					s.esc = esc
					return
				}
				i += j
				s.esc = false
				s.endValue()
				s.phase = phAfter
				continue
			}
			s.capture(c)
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.endValue()
				s.phase = phAfter
			}
		case phScalar:
			switch c {
			case ' ', '\t', '\r', '\n':
				s.endValue()
				s.phase = phAfter
			case ',':
				s.endValue()
				s.phase = phKey
			case '}':
				s.endValue()
				s.phase = phDone
			case '"', '{', '[', ']', ':':
				s.phase = phOff
			default:
				s.capture(c)
			}
		case phNested:
			i = s.nested(p, i)
		case phAfter:
			switch {
			case isSpace(c):
			case c == ',':
				s.phase = phKey
			case c == '}':
				s.phase = phDone
			default:
				s.phase = phOff
			}
		default: // phDone, phOff
			return
		}
	}
}

// keyByte decodes the next byte of a key, unescaping as encoding/json does.
func (s *jsonScanner) keyByte(c byte) {
	switch {
	case s.hex > 0:
		var v rune
		switch {
		case '0' <= c && c <= '9':
			v = rune(c - '0')
		case 'a' <= c && c <= 'f':
			v = rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			v = rune(c - 'A' + 10)
		default:
			s.phase = phOff
			return
		}
		s.r = s.r<<4 | v
		if s.hex--; s.hex == 0 {
			if utf16.IsSurrogate(s.r) {
				// Half of a rune outside the BMP, or a lone half that
				// decodes to U+FFFD: neither folds to a letter of "id"
				// or "method".
				s.keyBad = true
			} else {
				s.keyRune(s.r)
			}
		}
	case s.esc:
		s.esc = false
		switch c {
		case 'u':
			s.hex, s.r = 4, 0
		case '"', '\\', '/':
			s.keyRune(rune(c))
		case 'b':
			s.keyRune('\b')
		case 'f':
			s.keyRune('\f')
		case 'n':
			s.keyRune('\n')
		case 'r':
			s.keyRune('\r')
		case 't':
			s.keyRune('\t')
		default:
			s.phase = phOff
		}
	case c == '\\':
		s.esc = true
	case c == '"':
		k := s.key[:s.keyLen]
		s.isID = !s.keyBad && bytes.EqualFold(k, nameID)
		s.isMethod = !s.keyBad && bytes.EqualFold(k, nameMethod)
		if s.isMethod && bytes.Equal(k, nameMethod) {
			s.method = true
		}
		s.phase = phColon
	default:
		// Raw bytes, UTF-8 or not: bytes.EqualFold decodes them as
		// encoding/json's folding does.
		if int(s.keyLen) < len(s.key) {
			s.key[s.keyLen] = c
			s.keyLen++
		} else {
			s.keyBad = true
		}
	}
}

func (s *jsonScanner) keyRune(r rune) {
	if int(s.keyLen)+utf8.RuneLen(r) > len(s.key) {
		s.keyBad = true
		return
	}
	s.keyLen += uint8(utf8.EncodeRune(s.key[s.keyLen:], r))
}

func (s *jsonScanner) startValue(c byte) {
	if s.isMethod && c != '"' && c != 'n' {
		// mcp-go decodes a message with a "method" as a request only if
		// every key folding to "method" holds a string (or null).
		s.methodBad = true
	}
	if s.isID {
		s.idKind, s.idLen, s.idComplete, s.idTruncated = idScalar, 0, false, false
	}
	switch c {
	case '"':
		s.phase, s.esc = phString, false
		s.capture(c)
	case '{', '[':
		s.phase, s.depth, s.str, s.esc = phNested, 1, false, false
		if s.isID {
			s.idKind = idUnusable
		}
	case '}', ']', ',', ':':
		s.phase = phOff
	default:
		s.phase = phScalar
		s.capture(c)
	}
}

func (s *jsonScanner) capture(c byte) {
	if !s.isID || s.idKind != idScalar {
		return
	}
	if int(s.idLen) == len(s.id) {
		s.idKind, s.idTruncated = idUnusable, true
		return
	}
	s.id[s.idLen] = c
	s.idLen++
}

func (s *jsonScanner) endValue() {
	if s.isID {
		if s.idKind == idScalar && string(s.id[:s.idLen]) == "null" {
			s.idKind = idNull
		}
		s.idComplete = true
	}
	s.isID, s.isMethod = false, false
}

// requestID finds the id of the request whose body begins with prefix, as
// mcp-go marshals it: {"jsonrpc":"2.0","id":1,"method":...}. ok is false
// for a body that is not a request (a notification, a response to the
// server) or whose id is not within prefix: such requests expect no answer
// to check.
func requestID(prefix []byte) (id idToken, ok bool) {
	var s jsonScanner
	s.write(prefix)
	if !s.method || !s.idComplete || s.idKind != idScalar {
		return idToken{}, false
	}
	id.n = uint8(copy(id.b[:], s.id[:s.idLen]))
	return id, true
}

// idString is how an error or a log shows an answer's id.
func (s *jsonScanner) idString() string {
	switch s.idKind {
	case idScalar:
		return string(s.id[:s.idLen])
	case idUnusable:
		if s.idTruncated {
			return string(s.id[:]) + "…"
		}
		return "(an object or array)"
	}
	return "null"
}

// sseEvent is what the guard knows of the event of an SSE stream being
// read: where mcp-go cuts it (the parser), and whether the data of its
// complete lines is a whole object, which is what mcp-go dispatches if the
// stream ends here.
type sseEvent struct {
	sseParser
	endedAtLine bool
}

// guard stands between mcp-go and one request: it reads the id of the
// request on its way out, and checks the answer on its way back. Its Read
// is called by one goroutine at a time; Close may be called concurrently
// with it, as mcp-go's SSE reader does.
type guard struct {
	t     *Tracker
	ex    *Exchange // nil outside a call
	limit int64
	want  idToken // the request's id; empty: nothing to check
	check bool    // want is set

	body    io.ReadCloser // the response body as the transport gave it
	sse     bool
	length  int64 // the body's Content-Length; -1 if unknown
	n       int64 // bytes of a JSON body read so far
	err     error // once refused, every Read says why
	checked bool  // a JSON body's object has ended and was checked
	scan    jsonScanner
	ev      sseEvent

	peek [96]byte // the first bytes of the request's body
}

// expect learns the id of the answer req expects, if any: told, if its
// writer told it (Exchange.Expect), else from the start of its body.
func (g *guard) expect(req *http.Request, told *idToken) {
	switch req.Method {
	case http.MethodPost:
	case http.MethodGet:
		// A stream resumed with Last-Event-ID (SEP-1699) carries the answer
		// to the request last posted in this attempt. The session's own
		// GET stream carries none: only the size limit applies to it.
		if g.ex != nil && req.Header.Get("Last-Event-Id") != "" {
			g.want, g.check = g.ex.lastRequestID()
		}
		return
	default:
		return
	}
	if told != nil {
		g.want, g.check = *told, true
		if g.ex != nil {
			g.ex.setLastRequestID(*told)
		}
		return
	}
	if id, ok := requestID(g.peek[:peekBody(req, g.peek[:])]); ok {
		g.want, g.check = id, true
		if g.ex != nil {
			g.ex.setLastRequestID(id)
		}
	}
}

// inMemory is what mcp-go's request bodies are: a *bytes.Reader, which
// can be read at an offset without being consumed (*strings.Reader alike).
type inMemory interface {
	io.ReaderAt
	Len() int
	Size() int64
}

var nopClosers = [...]reflect.Type{reflect.TypeOf(io.NopCloser(nil)), reflect.TypeOf(io.NopCloser(bytes.NewReader(nil)))}

// peekBody reads the first bytes of req's body into p without consuming
// them, so that the request goes out untouched: net/http writes a body it
// knows to be in memory in one write with the headers, and a wrapper of
// ours would cost a second write and a copy buffer. As net/http's own
// isKnownInMemoryReader does, it looks inside the io.NopCloser in which
// http.NewRequest holds mcp-go's *bytes.Reader. Any other body is read
// through GetBody, which copies it.
func peekBody(req *http.Request, p []byte) int {
	if req.Body == nil || req.Body == http.NoBody {
		return 0
	}
	if t := reflect.TypeOf(req.Body); t == nopClosers[0] || t == nopClosers[1] {
		if r, ok := reflect.ValueOf(req.Body).Field(0).Interface().(inMemory); ok {
			n, _ := r.ReadAt(p, r.Size()-int64(r.Len()))
			return n
		}
	}
	if req.GetBody == nil {
		return 0
	}
	body, err := req.GetBody()
	if err != nil {
		return 0
	}
	defer body.Close()
	n, _ := io.ReadFull(body, p)
	return n
}

// watch puts the guard between resp's body and its reader.
func (g *guard) watch(resp *http.Response) {
	g.body = resp.Body
	g.sse = isEventStream(resp.Header.Get("Content-Type"))
	g.length = resp.ContentLength
	resp.Body = g
}

// isEventStream reports whether a Content-Type is what mime.ParseMediaType
// calls text/event-stream, as mcp-go decides; the values servers send are
// answered without its allocations.
func isEventStream(v string) bool {
	switch v {
	case "text/event-stream":
		return true
	case "application/json", "":
		return false
	}
	// Anything else is parsed as mcp-go parses it, errors and all (a
	// duplicate parameter makes it read no media type at all): the two
	// must agree on what is a stream (FuzzContentType).
	mt, _, _ := mime.ParseMediaType(v)
	return mt == "text/event-stream"
}

func (g *guard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if !g.sse {
		if g.length > g.limit {
			return 0, g.fail(&responseTooLargeError{limit: g.limit})
		}
		// Read at most one byte past the limit.
		if room := g.limit - g.n + 1; int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := g.body.Read(p)
	if err != nil && err != io.EOF && g.sse && g.check {
		// The stream answering a request broke (a reset, a proxy, a
		// restart). mcp-go resumes, with a GET carrying Last-Event-ID on
		// the same session, only a stream that ended (SEP-1699), and
		// fails one that broke off: to it, a break is an end, so that a
		// stream that carried event ids is resumed and its answer
		// delivered without the request being sent again (F28). The
		// exchange remembers the break, for the message of a call whose
		// answer is lost all the same.
		if g.ex != nil {
			g.ex.streamCut()
		}
		err = io.EOF
	}
	if n > 0 {
		if g.sse {
			if ok, ferr := g.events(p[:n]); ferr != nil {
				return ok, g.fail(ferr)
			}
		} else {
			if g.n += int64(n); g.n > g.limit {
				return 0, g.fail(&responseTooLargeError{limit: g.limit})
			}
			if g.check && !g.checked {
				g.scan.write(p[:n])
				if g.scan.ended() {
					g.checked = true
					if ferr := g.verify(false); ferr != nil {
						return 0, g.fail(ferr)
					}
				}
			}
		}
	}
	if err == io.EOF && g.sse && g.check && g.ev.data > 0 && g.ev.endedAtLine {
		// mcp-go dispatches the data of an event the stream ended in.
		if ferr := g.verify(true); ferr != nil {
			return n, g.fail(ferr)
		}
	}
	return n, err
}

// Close closes the response body. It may be called while Read runs.
func (g *guard) Close() error { return g.body.Close() }

// fail refuses the answer: nothing more is read, the connection is dropped
// rather than drained, and the call's exchange learns why, whatever mcp-go
// makes of the read error (its SSE reader only logs it).
func (g *guard) fail(err error) error {
	g.err = err
	_ = g.body.Close()
	if g.ex != nil {
		g.ex.refuse(err)
	}
	g.t.refused(err)
	return err
}

// verify checks the object scanned, a whole answer or one event's data.
func (g *guard) verify(event bool) error {
	s := &g.scan
	if event && s.method && !s.methodBad {
		// A request from the server, or a notification: not an answer.
		return nil
	}
	switch s.idKind {
	case idAbsent, idNull:
		// Not an answer to anything: mcp-go takes it for a notification,
		// or fails on it.
		return nil
	case idScalar:
		if sameID(g.want.bytes(), s.id[:s.idLen]) {
			return nil
		}
	}
	return &WrongAnswerError{Got: s.idString(), Want: string(g.want.bytes())}
}

// events reads p, the next bytes of an SSE stream: it returns how many of
// them may go on to mcp-go (up to the end of the last event it accepted)
// and why it refuses the rest.
func (g *guard) events(p []byte) (int, error) {
	e := &g.ev
	accepted := 0
	for i := 0; i < len(p); {
		n, found, run := e.next(p[i:], g.limit)
		i += n
		switch found {
		case sseData:
			if g.check {
				g.scan.write(run)
			}
		case sseLineEnd:
			e.endedAtLine = g.scan.ended()
		case sseBlank, sseDispatch:
			if found == sseDispatch && g.check && g.scan.ended() {
				if err := g.verify(true); err != nil {
					return accepted, err
				}
			}
			g.scan, e.endedAtLine = jsonScanner{}, false
			accepted = i
		case sseTooLarge:
			return accepted, &responseTooLargeError{limit: g.limit, event: true}
		}
	}
	return len(p), nil
}
