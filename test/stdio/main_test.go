// Package stdio tests the stdio client (client.NewStdio) against real
// processes: a server of ours that misbehaves on command
// (test/internal/stdioserver), and servers nobody here wrote, run over
// stdio.
package stdio

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// serverBin is the test server, built once by TestMain; goSDKBin and
// mcpGoBin are go-sdk's and mcp-go's example "everything" servers.
var serverBin, goSDKBin, mcpGoBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stdiotest")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin, goSDKBin, mcpGoBin = filepath.Join(dir, "stdioserver"), filepath.Join(dir, "gosdk-everything"), filepath.Join(dir, "mcpgo-everything")
	for bin, pkg := range map[string]string{
		serverBin: "github.com/resilientmcp/resilientmcp/test/internal/stdioserver",
		goSDKBin:  "github.com/modelcontextprotocol/go-sdk/examples/server/everything",
		mcpGoBin:  "github.com/mark3labs/mcp-go/examples/everything",
	} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg, err)
			os.Exit(1)
		}
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
