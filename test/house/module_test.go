// Package house checks what the repository's layout promises its users.
package house

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	rootModule = "github.com/resilientmcp/resilientmcp"

	// oldestGo is the oldest Go the README says the library supports: a
	// program importing client must not be made to ask for a newer one.
	oldestGo = "1.26.0"

	// mostRequired is how many modules a program importing only client
	// lists in its go.mod, resilientmcp included: mcp-go and its six,
	// backoff, oauth2 and sync (docs/modules.md).
	mostRequired = 11
)

// forbidden are modules only otelmcp, auth/redisstore or the tests need. A
// module in the user's graph sets a floor under the user's own version of
// it (minimal version selection), even if no package of it is built.
var forbidden = []string{
	"go.opentelemetry.io/otel/sdk",
	"github.com/redis/go-redis",
	"github.com/modelcontextprotocol/go-sdk",
}

// A new user's module that imports only client, as `go get` would make it:
// its module graph names none of OTel's SDK, go-redis and go-sdk, its go.mod
// requires at most mostRequired modules, and its go directive may stay at
// the oldest Go the README supports.
func TestAProgramImportingClientPaysOnlyForClient(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not installed, and this test runs it on a throwaway module")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	main := "package main\n\nimport \"" + rootModule + "/client\"\n\nfunc main() { _, _ = client.New(\"http://127.0.0.1:1/mcp\") }\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// The user's module alone, resolved as `go get` would (GOPROXY and
		// GOMODCACHE stay the environment's), with the Go at hand.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "init", "example.com/user")
	goCmd("mod", "edit", "-go="+oldestGo,
		"-require="+rootModule+"@v0.0.0-00010101000000-000000000000",
		"-replace="+rootModule+"="+root)
	goCmd("mod", "tidy")

	graph := goCmd("mod", "graph")
	for _, m := range forbidden {
		for line := range strings.Lines(graph) {
			if strings.Contains(line, " "+m) {
				t.Errorf("the user's module graph names %s: %s", m, strings.TrimSpace(line))
				break
			}
		}
	}

	var mod struct {
		Go      string
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal([]byte(goCmd("mod", "edit", "-json")), &mod); err != nil {
		t.Fatal(err)
	}
	var required []string
	for _, r := range mod.Require {
		required = append(required, r.Path)
	}
	t.Logf("a program importing only client requires %d modules: %s", len(required), strings.Join(required, " "))
	if len(required) > mostRequired {
		t.Errorf("the user's go.mod requires %d modules, want at most %d", len(required), mostRequired)
	}
	if mod.Go != oldestGo {
		t.Errorf("go mod tidy set the user's go directive to %s; a dependency asks for a Go newer than %s, the oldest the README supports", mod.Go, oldestGo)
	}
}
