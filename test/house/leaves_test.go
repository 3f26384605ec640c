package house

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// leaves are the client's packages that import only the standard
// library, mcp-go and one another (issue 45): the policy, the wire, the
// observer's types and the stores' types, and the leaves they share.
var leaves = []string{"client/internal/policy", "client/internal/wire", "client/observe", "client/store"}

// allowed are the packages a leaf may import besides the standard library.
var allowed = []string{
	"github.com/mark3labs/mcp-go",
	"github.com/cenkalti/backoff/v4", // the policy's pauses, as before issue 45
	rootModule + "/client/internal/policy",
	rootModule + "/client/internal/wire",
	rootModule + "/client/observe",
	rootModule + "/client/store",
	rootModule + "/internal/",
}

// The policy, the wire, the observer's types and the stores stay leaves:
// none of them imports auth (nor, through it, x/oauth2), client, or any
// mechanism of the module's. Their own imports are checked; mcp-go's are
// mcp-go's.
func TestClientLeavesStayLeaves(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not installed, and this test runs go list")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, leaf := range leaves {
		cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "./"+leaf)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", leaf, err, out)
		}
	deps:
		for dep := range strings.Lines(string(out)) {
			dep = strings.TrimSpace(dep)
			if first, _, _ := strings.Cut(dep, "/"); !strings.Contains(first, ".") {
				continue // the standard library
			}
			for _, a := range allowed {
				if strings.HasPrefix(dep, a) {
					continue deps
				}
			}
			t.Errorf("%s imports %s; it must stay a leaf", leaf, dep)
		}
	}
}
