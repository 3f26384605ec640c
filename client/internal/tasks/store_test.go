package tasks

import "testing"

// The arguments hash a PendingTask carries does not depend on the order of
// the arguments' keys. (The file task store's tests are in client/store.)
func TestArgsHash(t *testing.T) {
	if argsHash(map[string]any{"a": 2, "b": 1}) != argsHash(map[string]any{"b": 1, "a": 2}) {
		t.Error("the arguments hash depends on the order of the keys")
	}
}
