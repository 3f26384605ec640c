// Package fleet tests package fleet against real servers, each its own
// process: server-everything over stdio (node), go-sdk's "everything"
// example over HTTP, and an mcp-go server over HTTP (this test binary run
// again as TestHelperMCPGoServer), with a command that does not exist and a
// URL nobody listens on beside them.
package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// goSDKBin is go-sdk's example "everything" server, built once by TestMain.
var goSDKBin string

func TestMain(m *testing.M) {
	if os.Getenv(helperAddrEnv) != "" {
		os.Exit(m.Run()) // a server process: TestHelperMCPGoServer alone
	}
	dir, err := os.MkdirTemp("", "fleettest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goSDKBin = filepath.Join(dir, "gosdk-everything")
	build := exec.Command("go", "build", "-o", goSDKBin, "github.com/modelcontextprotocol/go-sdk/examples/server/everything")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building go-sdk's everything server:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
