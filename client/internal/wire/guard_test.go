package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
)

// answering is a RoundTripper that reads the request body as a transport
// would and answers with a fixed response.
type answering struct {
	contentType string
	body        []byte
	length      int64 // Content-Length; 0: unknown
	chunk       int
	sent        [][]byte // request bodies, as written
	src         *chunkReader
}

func (a *answering) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent []byte
	if req.Body != nil {
		sent, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	a.sent = append(a.sent, sent)
	a.src = &chunkReader{data: a.body, chunk: a.chunk}
	length := a.length
	if length == 0 {
		length = -1
	}
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {a.contentType}},
		Body:          io.NopCloser(a.src),
		ContentLength: length,
		Request:       req,
	}, nil
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

const callBody = `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"increment","arguments":{}}}`

// The request goes out byte for byte, however its first bytes were read to
// find the id.
func TestGuardSendsTheRequestUnchanged(t *testing.T) {
	for _, body := range []string{"", `{}`, callBody, strings.Repeat("x", 96), strings.Repeat("y", 97), callBody + strings.Repeat(" ", 4000)} {
		a := &answering{contentType: "application/json", body: []byte(`{"jsonrpc":"2.0","id":12,"result":{}}`)}
		resp, err := post(t, &Tracker{next: a}, context.Background(), body)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(got) != string(a.body) {
			t.Fatalf("answer read as %q, %v", got, err)
		}
		if string(a.sent[0]) != body {
			t.Fatalf("sent %q, want %q", a.sent[0], body)
		}
	}
}

// A body net/http does not know to be in memory is read through GetBody,
// and still goes out whole.
func TestGuardReadsOtherBodiesThroughGetBody(t *testing.T) {
	a := &answering{contentType: "application/json", body: []byte(`{"jsonrpc":"2.0","id":13,"result":{}}`)}
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", io.MultiReader(strings.NewReader(callBody)))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(callBody)), nil }
	resp, err := (&Tracker{next: a}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); !errors.As(err, new(*WrongAnswerError)) {
		t.Errorf("another request's answer read: %v", err)
	}
	if string(a.sent[0]) != callBody {
		t.Errorf("sent %q", a.sent[0])
	}
}

func TestGuardRefusesAnotherRequestsAnswer(t *testing.T) {
	var wrong atomic.Uint64
	for _, tc := range []struct {
		name, contentType, body string
		refused                 bool
	}{
		{"json, ours", "application/json", `{"jsonrpc":"2.0","id":12,"result":{}}`, false},
		{"json, another's", "application/json", `{"jsonrpc":"2.0","id":13,"result":{}}`, true},
		{"json, another's, id last", "application/json", `{"jsonrpc":"2.0","result":{"id":12},"id":13}`, true},
		{"json, no id", "application/json", `{"jsonrpc":"2.0","result":{}}`, false},
		{"sse, ours after a notification and a server request", "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"roots/list\"}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{}}\n\n", false},
		{"sse, another's", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := NewExchange()
			a := &answering{contentType: tc.contentType, body: []byte(tc.body), chunk: 5}
			resp, err := post(t, &Tracker{next: a, WrongAnswers: &wrong}, ex.Bind(context.Background()), callBody)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			var w *WrongAnswerError
			if refused := errors.As(err, &w); refused != tc.refused {
				t.Fatalf("read %q: %v", got, err)
			}
			if tc.refused {
				if !errors.Is(ex.Refusal(), err) {
					t.Errorf("the exchange recorded %v", ex.Refusal())
				}
				if bytes.HasSuffix(got, []byte("\n\n")) || bytes.HasSuffix(got, []byte("}")) {
					t.Errorf("the end of the refused answer went through: %q", got)
				}
			}
		})
	}
	if wrong.Load() != 3 {
		t.Errorf("WrongAnswers counted %d, want 3", wrong.Load())
	}
}

// The end of a string is found wherever the reads cut it: a backslash
// that ends one read escapes the first byte of the next. Each answer hides
// another request's id after strings full of escapes; every cut must still
// find it, and never take an escaped quote for a string's end.
func TestGuardFindsStringEndsAcrossReads(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":12,"result":{"text":"{\"id\":12,\"p\":\"C:\\\\d\"}"},"id":13}`,
		`{"jsonrpc":"2.0","id":12,"result":"\\\\\"},\"id\":12,\"","id":13}`,
		`{"jsonrpc":"2.0","id":12,"result":{"a":["\\","\\\"id\\\":12"]},"id":13}`,
	} {
		if !json.Valid([]byte(body)) {
			t.Fatalf("not JSON: %s", body)
		}
		for chunk := 1; chunk <= len(body); chunk++ {
			a := &answering{contentType: "application/json", body: []byte(body), chunk: chunk}
			resp, err := post(t, &Tracker{next: a}, NewExchange().Bind(context.Background()), callBody)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if w := new(WrongAnswerError); !errors.As(err, &w) {
				t.Fatalf("reads of %d bytes of %s: %v; want the answer refused", chunk, body, err)
			}
		}
	}
}

// A body whose Content-Length is over the limit is refused before a byte of
// it is read.
func TestGuardRefusesADeclaredLengthUnread(t *testing.T) {
	a := &answering{contentType: "application/json", body: bytes.Repeat([]byte("x"), 100), length: 100}
	resp, err := post(t, &Tracker{next: a, Limit: 99}, context.Background(), callBody)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "99 bytes") {
		t.Fatalf("got %v", err)
	}
	if a.src.read != 0 {
		t.Errorf("read %d bytes of it", a.src.read)
	}
}

// An SSE stream as a whole may be longer than the limit (progress for a
// long call); one event may not.
func TestGuardLimitsEventsNotStreams(t *testing.T) {
	event := "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"p\":\"" + strings.Repeat("x", 40) + "\"}}\n\n"
	stream := strings.Repeat(event, 50) + "data: {\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{}}\n\n"
	g, _ := testGuard([]byte(stream), 7, true, int64(len(event)), "12")
	if got := mcpgoSSE(g, len(event)); got.response == nil || got.readErr != nil {
		t.Fatalf("a stream of small events: %+v", got)
	}
	big := "data: " + strings.Repeat("x", 200) + "\n\n"
	g, src := testGuard([]byte(big+big), 7, true, 100, "12")
	got := mcpgoSSE(g, 100)
	if !errors.Is(got.readErr, ErrResponseTooLarge) || !strings.Contains(got.readErr.Error(), "event") {
		t.Fatalf("an event of 200 bytes, limit 100: %v", got.readErr)
	}
	if src.read > 110 {
		t.Errorf("read %d bytes", src.read)
	}
}

// A stream resumed by GET with Last-Event-ID carries the answer to the
// request posted before it in the attempt, and is checked against it.
func TestGuardChecksAResumedStream(t *testing.T) {
	ex := NewExchange()
	ctx := ex.Bind(context.Background())
	a := &answering{contentType: "text/event-stream", body: []byte("id: 1\nretry: 5\ndata: \n\n")}
	tr := &Tracker{next: a}
	resp, err := post(t, tr, ctx, callBody)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	a.body = []byte("data: {\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}\n\n")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:1/mcp", nil)
	req.Header.Set("Last-Event-ID", "1")
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if !errors.As(err, new(*WrongAnswerError)) {
		t.Fatalf("resumed stream with another request's answer: %v", err)
	}

	// The session's own GET stream answers nothing of ours: not checked.
	req, _ = http.NewRequest(http.MethodGet, "http://127.0.0.1:1/mcp", nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the GET stream: %v", err)
	}
}

// A notification, or an answer to a request of the server's, expects no
// answer with an id to check.
func TestGuardChecksOnlyRequests(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"result":{"roots":[]}}`,
	} {
		a := &answering{contentType: "application/json", body: []byte(`{"jsonrpc":"2.0","id":99,"result":{}}`)}
		resp, err := post(t, &Tracker{next: a}, context.Background(), body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Errorf("after %s: %v", body, err)
		}
	}
}

// chunkReader gives data in reads of at most chunk bytes, as a network
// would, so that every boundary falls somewhere.
type chunkReader struct {
	data  []byte
	chunk int
	read  int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data))
	if r.chunk > 0 {
		n = min(n, r.chunk)
	}
	copy(p, r.data[:n])
	r.data = r.data[n:]
	r.read += n
	return n, nil
}

// testGuard is a guard on data as a response body, for the request whose id
// is want ("" for none).
func testGuard(data []byte, chunk int, sse bool, limit int64, want string) (*guard, *chunkReader) {
	src := &chunkReader{data: data, chunk: chunk}
	g := &guard{t: &Tracker{}, limit: limit, body: io.NopCloser(src), sse: sse, length: -1}
	if want != "" {
		g.want.n = uint8(copy(g.want.b[:], want))
		g.check = true
	}
	return g, src
}

// mcpgoResponse decodes a JSON response body as mcp-go's SendRequest does.
func mcpgoResponse(r io.Reader) (*transport.JSONRPCResponse, error) {
	var resp transport.JSONRPCResponse
	if err := json.NewDecoder(r).Decode(&resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// sseRun is what mcp-go made of an SSE stream.
type sseRun struct {
	response *transport.JSONRPCResponse // the first answer it delivered
	readErr  error                      // the read error that ended the stream, other than EOF
	// Of the stream up to the first delivered answer (or the end):
	unparsed  bool // an event mcp-go could not decode, so ignored
	oversized bool // an event's data and line exceeded the limit
	rawIDs    [][]byte
}

// mcpgoSSE reads an SSE stream as mcp-go v1.2.1 does, transcribed from
// readSSEWithCursor and handleSSEResponse in client/transport/
// streamable_http.go: lines by ReadString('\n'), trailing "\r\n" trimmed,
// data joined by appendSSEData, each event tried as a response, then as a
// notification, then as a request from the server.
func mcpgoSSE(r io.Reader, limit int) sseRun {
	var run sseRun
	br := bufio.NewReader(r)
	var data string
	handle := func(data string) bool {
		var message transport.JSONRPCResponse
		if err := json.Unmarshal([]byte(data), &message); err != nil {
			run.unparsed = true
			return false
		}
		if message.ID.IsNil() {
			return false // a notification
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &raw); err == nil {
			if _, hasMethod := raw["method"]; hasMethod {
				var request transport.JSONRPCRequest
				if err := json.Unmarshal([]byte(data), &request); err == nil {
					return false // a request from the server
				}
			}
		}
		var id struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(data), &id)
		run.rawIDs = append(run.rawIDs, id.ID)
		run.response = &message
		return true
	}
	for {
		line, err := br.ReadString('\n')
		if n := len(data) + len(strings.TrimSuffix(line, "\n")); n > limit {
			run.oversized = true
		}
		if err != nil {
			if err == io.EOF {
				if data != "" {
					handle(data)
				}
				return run
			}
			run.readErr = err
			return run
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if data != "" {
				if handle(data) {
					return run
				}
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

// A request whose writer told the exchange its id (Expect, the hot path's
// way) has its answer checked against that id, not against one read from
// its body; the next POST takes the told id, even one answered without
// being sent (Preanswer), and the POSTs after it are read again.
func TestGuardChecksAgainstTheIDItWasTold(t *testing.T) {
	told := strings.Replace(callBody, `"id":12`, `"id":99`, 1) // the body disagrees: the told id wins
	for _, tc := range []struct {
		name, answer string
		refused      bool
	}{
		{"the told id", `{"jsonrpc":"2.0","id":12,"result":{}}`, false},
		{"the body's id", `{"jsonrpc":"2.0","id":99,"result":{}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := NewExchange()
			ex.Expect(12)
			a := &answering{contentType: "application/json", body: []byte(tc.answer)}
			resp, err := post(t, &Tracker{next: a}, ex.Bind(context.Background()), told)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if refused := errors.As(err, new(*WrongAnswerError)); refused != tc.refused {
				t.Fatalf("refused %v, want %v: %v", refused, tc.refused, err)
			}
			if id, ok := ex.RequestID(); !ok || string(id) != "12" {
				t.Errorf("the exchange's request id is %s, %v; want 12", id, ok)
			}
			if string(a.sent[0]) != told {
				t.Errorf("sent %q, want %q", a.sent[0], told)
			}
		})
	}
	// readAnswer posts body under ctx to a server that answers with
	// answer, and returns what reading the answer met.
	readAnswer := func(t *testing.T, ctx context.Context, body io.Reader, answer string) error {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/mcp", body)
		resp, err := (&Tracker{next: &answering{contentType: "application/json", body: []byte(answer)}}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}
	t.Run("taken once", func(t *testing.T) {
		ex := NewExchange()
		ctx := ex.Bind(context.Background())
		ex.Expect(12)
		ex.Preanswer(&http.Response{StatusCode: http.StatusAccepted, Body: http.NoBody}, nil)
		if _, err := post(t, &Tracker{next: &answering{}}, ctx, callBody); err != nil {
			t.Fatal(err)
		}
		// The preanswered request took the told id: this one's is read
		// from its body.
		if err := readAnswer(t, ctx, strings.NewReader(told), `{"jsonrpc":"2.0","id":99,"result":{}}`); err != nil {
			t.Errorf("the answer to the request read from its body was refused: %v", err)
		}
	})
	t.Run("forgotten by Reset", func(t *testing.T) {
		// An id told in an attempt whose request never reached the
		// tracker must not be taken for the next attempt's, which mcp-go
		// may write.
		ex := NewExchange()
		ex.Expect(12)
		ex.Reset()
		if err := readAnswer(t, ex.Bind(context.Background()), strings.NewReader(told), `{"jsonrpc":"2.0","id":99,"result":{}}`); err != nil {
			t.Errorf("an id told before Reset was checked after it: %v", err)
		}
	})
	t.Run("a body the guard cannot read", func(t *testing.T) {
		// Neither in memory nor with GetBody: only the told id can say
		// which answer is this request's.
		ex := NewExchange()
		ex.Expect(12)
		body := io.MultiReader(strings.NewReader(callBody))
		if err := readAnswer(t, ex.Bind(context.Background()), body, `{"jsonrpc":"2.0","id":13,"result":{}}`); !errors.As(err, new(*WrongAnswerError)) {
			t.Errorf("told 12, an answer with 13 was read: %v", err)
		}
	})
}
