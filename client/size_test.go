package client

import (
	"reflect"
	"testing"
)

// TestClientSizeClass keeps a ResilientClient within the allocator's
// 1024 B size class. The client is one allocation, rounded up to its
// class: over one release it grew from 888 B (the 896 B class) to 1288 B,
// which the allocator rounds to 1408 B, 512 B more for every idle client
// (issue 40, BenchmarkIdleClients). A field that does not fit goes behind
// a pointer made when it is first needed, as the stdio options, the
// listing store's writer and WithClientInfo's identity do.
func TestClientSizeClass(t *testing.T) {
	const class = 1024
	if n := reflect.TypeFor[ResilientClient]().Size(); n > class {
		t.Errorf("a ResilientClient is %d B, over the %d B size class: every client pays the next class (1152 B)", n, class)
	}
}
