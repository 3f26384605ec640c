package wire

import (
	"bytes"
	"encoding/json"
)

// AnswerID is the id of the JSON-RPC answer that prefix begins, if its top
// level shows one before prefix ends: nil for a request or a notification
// (a method before the id), or if the id comes after what prefix holds
// (the TypeScript SDK writes its result first). Both transports that read
// a stream of messages (stdio's lines, HTTP+SSE's events) ask it of an
// answer cut at the size limit, to fail the one call it was for.
func AnswerID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil || key == "method" {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if key == "id" {
			return value
		}
	}
	return nil
}
