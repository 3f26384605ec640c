package sse

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/resilientmcp/resilientmcp/client/internal/wire"
)

type got struct{ event, data string }

func read(t *testing.T, stream string, limit int64, skip bool) ([]got, []string, error) {
	t.Helper()
	var evs []got
	var prefixes []string
	err := readEvents(strings.NewReader(stream), limit, func(p []byte) bool {
		prefixes = append(prefixes, string(p))
		return skip
	}, func(event string, data []byte) error {
		evs = append(evs, got{event, string(data)})
		return nil
	})
	return evs, prefixes, err
}

// readEvents cuts a stream as the SSE specification does: events end at a
// blank line, data lines join with '\n', one leading space dropped,
// '\r\n' ends a line, comments and other fields carry nothing.
func TestReadEvents(t *testing.T) {
	stream := ": hello\r\nevent: endpoint\r\ndata: /m?s=1\r\n\r\n" +
		"data: {\"a\":\ndata:1}\nid: 7\nretry: 10\n\n" +
		"\n\n" + // blank lines with no data: no event
		"event: message\ndata: last\n\n" +
		"data: cut off at the end"
	evs, _, err := read(t, stream, 1<<20, true)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("err %v, want io.EOF", err)
	}
	want := []got{{"endpoint", "/m?s=1"}, {"", "{\"a\":\n1}"}, {"message", "last"}}
	if len(evs) != len(want) {
		t.Fatalf("events %q, want %q", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, evs[i], want[i])
		}
	}
}

// An event over the limit: tooLarge gets the start of its data; if it
// takes it, the rest of the event is skipped and the stream goes on, else
// the stream ends with ErrResponseTooLarge.
func TestReadEventsOverTheLimit(t *testing.T) {
	big := strings.Repeat("x", 10000)
	for name, stream := range map[string]string{
		"one long line":       "data: {\"id\":\"p-1\",\"r\":\"" + big + "\"}\n\ndata: next\n\n",
		"many lines":          "data: {\"id\":\"p-1\",\n" + strings.Repeat("data: "+big[:100]+"\n", 200) + "\ndata: next\n\n",
		"CRLF, ends at limit": "data: {\"id\":\"p-1\",\"r\":\"" + big + "\"}\r\n\r\ndata: next\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			evs, prefixes, err := read(t, stream, 1000, true)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("err %v", err)
			}
			if len(prefixes) != 1 || !strings.HasPrefix(prefixes[0], `{"id":"p-1",`) || len(prefixes[0]) > 1000+4096 {
				t.Errorf("prefixes %d, first %.40q (%d B)", len(prefixes), prefixes[0], len(prefixes[0]))
			}
			if len(evs) != 1 || evs[0].data != "next" {
				t.Errorf("after the skipped event: %q, want the next", evs)
			}
			_, _, err = read(t, stream, 1000, false)
			if !errors.Is(err, wire.ErrResponseTooLarge) {
				t.Errorf("not skipped: %v, want ErrResponseTooLarge", err)
			}
		})
	}
}

func TestAnswerID(t *testing.T) {
	for prefix, want := range map[string]string{
		`{"jsonrpc":"2.0","id":"p-1","result":{"x":"yyy`: `"p-1"`,
		`{"result":{"x":"yyy`:                            "",
		`{"method":"x","id":"p-1","params":{`:            "",
		`not json`:                                       "",
	} {
		if got := string(wire.AnswerID([]byte(prefix))); got != want {
			t.Errorf("wire.AnswerID(%q) = %q, want %q", prefix, got, want)
		}
	}
}
