package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// mcpgoEvents is the data of the events mcp-go v1.2.1 dispatches from an
// SSE stream, transcribed from readSSEWithCursor in client/transport/
// streamable_http.go (as mcpgoSSE is), and whether a line, with the
// event's data before it, exceeded limit.
func mcpgoEvents(stream []byte, limit int) (events []string, oversized bool) {
	br := bufio.NewReader(bytes.NewReader(stream))
	var data string
	for {
		line, err := br.ReadString('\n')
		if len(data)+len(strings.TrimSuffix(line, "\n")) > limit {
			return events, true
		}
		if err != nil {
			if data != "" {
				events = append(events, data)
			}
			return events, false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data != "" {
				events = append(events, data)
				data = ""
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			v = strings.TrimPrefix(v, " ")
			if data == "" {
				data = v
			} else {
				data += "\n" + v
			}
		}
	}
}

// readEvents reads every event of stream through an EventReader, fed in
// reads of chunk bytes.
func readEvents(stream []byte, chunk, limit int) (events []string, err error) {
	r := NewEventReader(&chunkReader{data: stream, chunk: chunk}, int64(limit))
	for {
		data, err := r.Next()
		if err != nil {
			return events, err
		}
		events = append(events, string(data))
	}
}

// checkEvents holds EventReader to mcp-go's reading of stream.
func checkEvents(t *testing.T, stream []byte, chunk, limit int) {
	t.Helper()
	got, err := readEvents(stream, chunk, limit)
	want, oversized := mcpgoEvents(stream, limit)
	if oversized {
		if !errors.Is(err, ErrResponseTooLarge) {
			t.Fatalf("%q (limit %d): %v, want ErrResponseTooLarge", stream, limit, err)
		}
		// The events before the one over the limit came through.
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("%q (limit %d): events %q before the refusal, want %q", stream, limit, got, want)
		}
		return
	}
	if err != io.EOF {
		t.Fatalf("%q: %v, want io.EOF", stream, err)
	}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
		t.Fatalf("%q (in reads of %d): events %q, want %q", stream, chunk, got, want)
	}
}

var eventSeeds = []string{
	"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
	"data: a\ndata: b\n\ndata:c\r\n\r\n",
	"data:\ndata: x\n\n",                // an empty first line: no '\n' joins it
	"data:  two spaces\r\r\n\r\n",       // one space dropped, every trailing '\r'
	"data: a\rb\r\r c\n\n",              // '\r's inside the line are data
	"id: 1\nretry: 10\n: a comment\n\n", // an event without data: nothing
	"data: ends the stream\n",           // dispatched at the end
	"data: complete\ndata: partial",     // the partial line dropped
	"\r\r\ndata: x\n\r\n",               // '\r's alone make a blank line
	"\rdata: x\n\n",                     // not a data line
	"dat\n\na: x\n\n",                   // a prefix cut by a line break
	"data: " + strings.Repeat("\r", 200) + "x\n\n",
}

func TestEventReaderReadsAsMcpGo(t *testing.T) {
	for _, s := range eventSeeds {
		for _, chunk := range []int{0, 1, 2, 7} {
			checkEvents(t, []byte(s), chunk, 1<<20)
		}
		for limit := 1; limit <= len(s); limit++ { // each limit, the exact one among them
			checkEvents(t, []byte(s), 3, limit)
		}
	}
}

// A read error ends the events without dispatching the pending one, as
// mcp-go's reader does.
func TestEventReaderReadError(t *testing.T) {
	broken := errors.New("connection reset")
	r := NewEventReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), &failing{broken}), 0)
	if data, err := r.Next(); err != nil || string(data) != "a" {
		t.Fatalf("first event: %q, %v", data, err)
	}
	if data, err := r.Next(); err != broken {
		t.Fatalf("after the break: %q, %v; want %v", data, err, broken)
	}
	if _, err := r.Next(); err != broken {
		t.Fatalf("again: %v; want %v", err, broken)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

// FuzzEventReader: EventReader dispatches the events mcp-go dispatches,
// however the stream is cut into reads, and refuses an event exactly when
// mcp-go would hold more than the limit.
func FuzzEventReader(f *testing.F) {
	for _, s := range append(eventSeeds, sseSeeds...) {
		f.Add([]byte(s), uint8(0), uint16(0))
		f.Add([]byte(s), uint8(3), uint16(12))
	}
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8, limit uint16) {
		lim := int(limit)
		if lim == 0 {
			lim = 1 << 20
		}
		checkEvents(t, stream, int(chunk), lim)
	})
}
