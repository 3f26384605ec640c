package wire

import (
	"bytes"
	"io"
)

// This file is the client's one reader of SSE streams. Two readers use it:
// the guard, which checks each answer mcp-go reads as it streams past and
// keeps none of it (guard.go), and EventReader, with which the client reads
// an event stream of its own (a session's GET stream opened after mcp-go
// made the session). Both must cut a stream where mcp-go cuts it (its
// readSSEWithCursor, in client/transport/streamable_http.go): the guard,
// to check the very data mcp-go dispatches; the client's own stream, so
// that a server's events mean the same on either stream.
//
// mcp-go reads lines with bufio.Reader.ReadString('\n'): a line ends at
// '\n' only, and its trailing '\r's are trimmed; a line empty after
// trimming ends the event, which is dispatched if it has data; "data:"
// lines are joined with '\n', one leading space dropped from each. At the
// end of the stream, the data of the event's complete lines is dispatched
// and a last line without its '\n' is dropped. Other fields (event:, id:,
// retry:) and comments carry nothing the client reads: mcp-go's own
// reader keeps id: and retry: to resume an answer's stream (SEP-1699),
// which the guard follows by the request's Last-Event-ID header, not by
// the stream.

// The kinds of line an sseParser is in.
const (
	lineStart = iota // not yet known: blank, data, or another field
	lineData         // a "data:" line
	lineOther        // any other line: a comment, event:, id:, retry:
)

// What sseParser.next found.
const (
	sseMore     = iota // the bytes given are consumed
	sseData            // run is the next bytes of the event's data
	sseLineEnd         // a data line ended: what it gave is the event's
	sseBlank           // a blank line ended an event without data
	sseDispatch        // a blank line ended an event with data: dispatch it
	sseTooLarge        // the event's data and the line being read exceed the limit
)

// sseParser cuts an SSE stream into events as mcp-go does, and keeps none
// of it: it hands its caller the stream's data a run at a time and says
// where data lines and events end, in bounded memory and linear time.
type sseParser struct {
	line   uint8
	prefix uint8 // bytes of "data:" matched at the start of the line
	first  bool  // the next byte is the first of a data value
	lineN  int64 // bytes of the current line so far
	crs    int64 // '\r's held back: trailing ones are trimmed from the line
	fed    int64 // bytes the current data line gave the event's data
	data   int64 // bytes of the event's data from complete lines
}

var (
	lf  = []byte{'\n'}
	crs = bytes.Repeat([]byte{'\r'}, 64)
)

// next reads p, the next bytes of the stream, up to the next thing it
// finds; limit bounds the event's data and the line being read, which
// mcp-go holds. It returns how many bytes of p it consumed (possibly none, when
// it hands over '\r's it held back), what it found, and, for sseData, the
// run of data: a slice of p, or the '\n' that joins data lines, or '\r's
// that turned out not to end the line.
func (e *sseParser) next(p []byte, limit int64) (n int, found int, run []byte) {
	for n < len(p) {
		c := p[n]
		if c == '\n' {
			n++
			found = sseMore
			switch {
			case e.line == lineStart && e.prefix == 0:
				found = sseBlank
				if e.data > 0 {
					found = sseDispatch
				}
				e.data = 0
			case e.line == lineData:
				e.data += e.fed
				found = sseLineEnd
			}
			e.line, e.prefix, e.first, e.lineN, e.crs, e.fed = lineStart, 0, false, 0, 0, 0
			if found != sseMore {
				return n, found, nil
			}
			continue
		}
		// How far this step reads: one byte, or a run up to the next line
		// break.
		step := 1
		switch e.line {
		case lineStart:
			switch {
			case c == '\r' && e.prefix == 0:
				// Maybe a blank line; '\r's are trimmed.
			case e.lineN > 0 && e.prefix == 0, c != "data:"[e.prefix]:
				e.line = lineOther
			default:
				if e.prefix++; e.prefix == 5 {
					e.line, e.first = lineData, true
					if e.data > 0 {
						e.fed++
						e.lineN++
						n++
						if e.data+e.lineN > limit {
							return n, sseTooLarge, nil
						}
						return n, sseData, lf
					}
				}
			}
		case lineData:
			switch {
			case e.first && c == ' ':
				e.first = false
			case c == '\r':
				e.first = false
				e.crs++
			case e.crs > 0:
				// The '\r's held back were inside the line: data.
				k := min(e.crs, int64(len(crs)))
				e.crs -= k
				e.fed += k
				return n, sseData, crs[:k]
			default:
				e.first = false
				step = indexCRLF(p[n:])
				e.fed += int64(step)
				if e.lineN += int64(step); e.data+e.lineN > limit {
					return n + step, sseTooLarge, nil
				}
				return n + step, sseData, p[n : n+step]
			}
		case lineOther:
			step = bytes.IndexByte(p[n:], '\n')
			if step < 0 {
				step = len(p) - n
			}
		}
		if e.lineN += int64(step); e.data+e.lineN > limit {
			return n + step, sseTooLarge, nil
		}
		n += step
	}
	return n, sseMore, nil
}

// indexCRLF is the length of the run at the start of p before a '\r' or a
// '\n', at least 1 (p[0] is neither).
func indexCRLF(p []byte) int {
	n := bytes.IndexByte(p, '\n')
	if n < 0 {
		n = len(p)
	}
	if r := bytes.IndexByte(p[:n], '\r'); r >= 0 {
		n = r
	}
	return n
}

// EventReader reads the data of an SSE stream's events as mcp-go reads
// them. It is not safe for concurrent use.
type EventReader struct {
	r      io.Reader
	limit  int64
	p      sseParser
	buf    []byte // read from r; buf[off:] not yet parsed
	off    int
	data   []byte // the event's data: data[:whole] from complete lines
	whole  int
	handed bool  // data was handed to the caller: it starts over
	err    error // what r's last read returned, once buf is parsed
}

// NewEventReader returns an EventReader of r, whose events' data (with the
// line being read) may not exceed limit bytes, DefaultMaxResponseBytes if
// limit is not positive.
func NewEventReader(r io.Reader, limit int64) *EventReader {
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	return &EventReader{r: r, limit: limit}
}

// Next returns the data of the next event that has any, valid until the
// next call. At the end of the stream, it returns the data of an event the
// stream ended in, then io.EOF. An event over the limit is
// ErrResponseTooLarge; a failed read, its error. After an error, every
// call returns it.
func (r *EventReader) Next() ([]byte, error) {
	if r.handed {
		r.data, r.whole, r.handed = r.data[:0], 0, false
	}
	for {
		for r.off < len(r.buf) {
			n, found, run := r.p.next(r.buf[r.off:], r.limit)
			r.off += n
			switch found {
			case sseData:
				r.data = append(r.data, run...)
			case sseLineEnd:
				r.whole = len(r.data)
			case sseBlank:
				r.data, r.whole = r.data[:0], 0
			case sseDispatch:
				r.handed = true
				return r.data[:r.whole], nil
			case sseTooLarge:
				r.buf, r.off = nil, 0
				r.err = &responseTooLargeError{limit: r.limit, event: true}
			}
		}
		if r.err != nil {
			if r.err == io.EOF && r.whole > 0 {
				r.handed = true
				return r.data[:r.whole], nil
			}
			return nil, r.err
		}
		if r.buf == nil {
			r.buf = make([]byte, 4<<10)
		}
		n, err := r.r.Read(r.buf[:cap(r.buf)])
		r.buf, r.off, r.err = r.buf[:n], 0, err
	}
}
