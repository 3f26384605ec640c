package toolcall

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Buffer holds the params of one tools/call while it is written and sent.
// Get one with NewBuffer and give it back with Free once the request has
// been sent (the transport copies what it sends).
type Buffer struct {
	bytes.Buffer
	enc *json.Encoder
}

var buffers = sync.Pool{New: func() any {
	b := new(Buffer)
	b.enc = json.NewEncoder(&b.Buffer)
	return b
}}

// maxPooled bounds the buffers kept for reuse: one call with a document
// for arguments must not pin its size for good.
const maxPooled = 64 << 10

// NewBuffer returns an empty Buffer from the pool.
func NewBuffer() *Buffer { return buffers.Get().(*Buffer) }

// Free gives b back to the pool; b must not be used after.
func (b *Buffer) Free() {
	if b.Cap() > maxPooled {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// WriteParams writes the params of a tools/call of name with arguments
// (omitted when nil, as mcp-go's omitempty does), byte for byte as mcp-go
// marshals a CallToolParams without _meta, task or input responses:
// {"name":...,"arguments":...}. With meta, the params of the stateless
// era instead, as mcp-go's per-request metadata leaves them (its keys in
// sorted order): {"_meta":meta,"arguments":...,"name":...}; meta is the
// whole _meta object.
func (b *Buffer) WriteParams(name string, arguments any, meta []byte) error {
	if meta != nil {
		b.WriteString(`{"_meta":`)
		b.Write(meta)
		if arguments != nil {
			b.WriteString(`,"arguments":`)
			if err := b.encode(arguments); err != nil {
				return err
			}
		}
		b.WriteString(`,"name":`)
		if err := b.writeString(name); err != nil {
			return err
		}
		b.WriteByte('}')
		return nil
	}
	b.WriteString(`{"name":`)
	if err := b.writeString(name); err != nil {
		return err
	}
	if arguments != nil {
		b.WriteString(`,"arguments":`)
		if err := b.encode(arguments); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// encode writes v as json.Marshal does (the encoder's newline dropped).
func (b *Buffer) encode(v any) error {
	if err := b.enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1)
	return nil
}

// writeString writes s as json.Marshal quotes it; a plain name is copied
// as it is.
func (b *Buffer) writeString(s string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return b.encode(s)
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return nil
}

// AppendRequest appends the JSON-RPC request of a tools/call with id and
// params (WriteParams's) to dst, byte for byte as mcp-go's transport
// marshals it: {"jsonrpc":"2.0","id":id,"method":"tools/call","params":...}.
func AppendRequest(dst []byte, id int64, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(dst, `,"method":"tools/call","params":`...)
	dst = append(dst, params...)
	return append(dst, '}')
}
