package toolcall

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// parse is how mcp-go's client reads a tools/call answer's result.
func parse(data []byte) (*mcp.CallToolResult, error) {
	raw := json.RawMessage(data)
	return mcp.ParseCallToolResult(&raw)
}

// agree fails t if DecodeResult reads data and mcp-go does not, or reads
// another value.
func agree(t *testing.T, data []byte) (mine bool) {
	t.Helper()
	got, ok := DecodeResult(data)
	if !ok {
		return false
	}
	want, err := parse(data)
	if err != nil {
		t.Fatalf("decoded %s, which mcp-go refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %s\n as %#v\nmcp-go: %#v", data, got, want)
	}
	return true
}

// randomResult is a CallToolResult made of mcp-go's own types, as a
// server marshals one.
func randomResult(r *rand.Rand) *mcp.CallToolResult {
	res := &mcp.CallToolResult{IsError: r.IntN(4) == 0}
	if r.IntN(2) == 0 {
		res.ResultType = mcp.ResultTypeComplete
	}
	if r.IntN(4) == 0 {
		res.Meta = randomMeta(r)
	}
	if r.IntN(3) == 0 {
		res.StructuredContent = map[string]any{"n": r.IntN(1000), randomString(r): []any{randomString(r), 1.5, true, nil}}
	}
	for range r.IntN(5) {
		res.Content = append(res.Content, randomContent(r))
	}
	if res.Content == nil && r.IntN(2) == 0 {
		res.Content = []mcp.Content{} // marshals as []
	}
	return res
}

func randomContent(r *rand.Rand) mcp.Content {
	var ann mcp.Annotated
	if r.IntN(4) == 0 {
		p := r.Float64()
		ann.Annotations = &mcp.Annotations{Audience: []mcp.Role{mcp.RoleUser}, Priority: &p, LastModified: "2026-11-28T06:00:00Z"}
	}
	var meta *mcp.Meta
	if r.IntN(5) == 0 {
		meta = randomMeta(r)
	}
	switch r.IntN(7) {
	case 0, 1, 2:
		return mcp.TextContent{Annotated: ann, Meta: meta, Type: mcp.ContentTypeText, Text: randomString(r)}
	case 3:
		return mcp.ImageContent{Annotated: ann, Meta: meta, Type: mcp.ContentTypeImage, Data: "aGVsbG8=", MIMEType: "image/png"}
	case 4:
		return mcp.AudioContent{Annotated: ann, Meta: meta, Type: mcp.ContentTypeAudio, Data: randomString(r), MIMEType: "audio/wav"}
	case 5:
		l := mcp.ResourceLink{Annotated: ann, Meta: meta, Type: mcp.ContentTypeLink, URI: "file:///" + randomString(r), Name: randomString(r), Title: randomString(r), MIMEType: "text/plain"}
		if r.IntN(2) == 0 {
			n := r.Int64N(1 << 40)
			l.Size = &n
		}
		return l
	}
	var rc mcp.ResourceContents = mcp.TextResourceContents{URI: "mem://" + randomString(r), MIMEType: "text/plain", Text: randomString(r)}
	if r.IntN(2) == 0 {
		rc = mcp.BlobResourceContents{URI: "mem://b", MIMEType: "application/octet-stream", Blob: "AAEC"}
	}
	return mcp.EmbeddedResource{Annotated: ann, Meta: meta, Type: mcp.ContentTypeResource, Resource: rc}
}

func randomMeta(r *rand.Rand) *mcp.Meta {
	m := &mcp.Meta{AdditionalFields: map[string]any{randomString(r): randomString(r), "k": float64(r.IntN(9))}}
	if r.IntN(2) == 0 {
		m.ProgressToken = randomString(r)
	}
	return m
}

// randomString is text with the characters JSON escapes, HTML's, and
// runes outside ASCII.
func randomString(r *rand.Rand) string {
	pieces := []string{"x", "echo", "\"", "\\", "\n", "\t", "<b>", "&", "é", "日本", "😀", "\u2028", "\x01", " ", "{}", "[1,2]"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// FuzzDecodeResult: random valid results, made of mcp-go's types and
// marshalled by them, decode to mcp-go's value; each is also read again
// with its keys' whitespace and order as a server might write them.
func FuzzDecodeResult(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>32))
		data, err := json.Marshal(randomResult(r))
		if err != nil {
			t.Fatal(err)
		}
		if !agree(t, data) {
			t.Fatalf("a result mcp-go marshalled was not read: %s", data)
		}
		// The same result re-encoded through a map (keys sorted) and
		// indented, as other servers write.
		var m any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		other, _ := json.MarshalIndent(m, " ", "\t")
		if !agree(t, other) {
			t.Fatalf("a result re-encoded was not read: %s", other)
		}
	})
}

// FuzzDecodeResultBytes: whatever the bytes, a result DecodeResult reads
// is the one mcp-go reads; it may refuse, never misread.
func FuzzDecodeResultBytes(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"x","Text":"y"}]}`,
		`{"content":[],"isError":true,"_meta":{"progressToken":1}}`,
		`{"content":[{"TYPE":"image","data":"a","mimeType":"b"}]}`,
		`{"content":[{"type":"resource_link","uri":"u","name":"n","size":3}],"structuredContent":{"a":[1]}}`,
		`{"content":[{"type":"resource","resource":{"uri":"u","text":"t"}}],"resultType":"complete"}`,
		`{"content":null}`,
		`{"resultType":"input_required","inputRequests":{}}`,
		`{"content":[{"type":"text","text":"\ud800"}],"content":[]}`,
	} {
		f.Add([]byte(s))
	}
	addRecorded(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // DecodeResult's precondition: the envelope's decoder refuses these first
		}
		agree(t, data)
	})
}

// addRecorded adds the results recorded from real servers (testdata).
func addRecorded(f *testing.F) {
	for _, res := range recorded(f) {
		f.Add(res.data)
	}
}

type recordedResult struct {
	name string
	data []byte
}

// recorded reads testdata/answers/*.json: results of tools/call answers as
// real servers sent them (see TestRecordedAnswers).
func recorded(tb testing.TB) []recordedResult {
	files, err := filepath.Glob(filepath.Join("testdata", "answers", "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []recordedResult
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, recordedResult{filepath.Base(name), data})
	}
	return out
}

// TestRecordedAnswers: every result recorded from a real server decodes
// to mcp-go's value, and the common ones are this decoder's to read.
func TestRecordedAnswers(t *testing.T) {
	answers := recorded(t)
	if len(answers) == 0 {
		t.Fatal("no recorded answers in testdata/answers")
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			mine := agree(t, a.data)
			if !mine && !strings.Contains(a.name, "fallback") {
				t.Errorf("not read by the decoder: %s", a.data)
			}
		})
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, s := range []string{
		`{"content":null}`,
		`{"isError":true}`, // no content: mcp-go's error, not ours to give
		`{"content":[{"Type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"x"}],"Content":[]}`,
		`{"content":[{"type":"tool_use","id":"1","name":"n"}]}`,
		`{"content":[{"type":"text","text":null}]}`,
		`{"content":[{"type":"text","text":"x"}],"isError":null}`,
		`{"content":[{"type":"text","text":"x"}],"resultType":"input_required"}`,
		`{"content":[{"type":"text","text":"x"}],"requestState":"s"}`,
		`{"content":[{"type":"text","te\u0078t":"x"}]}`,
		`{"content":[{"type":"text","text":"x","type":"image"}]}`,
	} {
		if res, ok := DecodeResult([]byte(s)); ok {
			t.Errorf("read %s as %#v; want it left to mcp-go", s, res)
		}
	}
}

// FuzzDecodeResponse: whatever the bytes, an answer DecodeResponse reads
// is read the same by mcp-go's transport (its json.Decoder into a
// JSONRPCResponse, the id required) and parser.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"result":{"content":[]},"id":"a","jsonrpc":"2.0"}` + "\n",
		`{"jsonrpc":"2.0","id":null,"result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"Result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]}} trailing`,
	} {
		f.Add([]byte(s))
	}
	for _, res := range recorded(f) {
		f.Add(append(append([]byte(`{"jsonrpc":"2.0","id":7,"result":`), res.data...), '}'))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := DecodeResponse(body)
		if !ok {
			return
		}
		var resp transport.JSONRPCResponse
		if err := json.NewDecoder(bytes.NewReader(body)).Decode(&resp); err != nil || resp.ID.IsNil() || resp.Error != nil {
			t.Fatalf("decoded %s, which mcp-go's transport refuses: %v %+v", body, err, resp)
		}
		want, err := mcp.ParseCallToolResult(&resp.Result)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %s\n as %#v\nmcp-go: %#v, %v", body, got, want, err)
		}
	})
}
