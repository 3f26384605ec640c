package stdio

import (
	"runtime"
	"strings"
	"testing"
)

func TestStdioEnvKeepsOnlyHarmlessVariables(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows inherits its own list")
	}
	env := Env([]string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=s", "Path=/x", "SHELL=() { :; }", "TERM=xterm"}, []string{"TOKEN=t"})
	if got := strings.Join(env, " "); got != "PATH=/bin HOME=/h TERM=xterm TOKEN=t" {
		t.Errorf("Env = %s", got)
	}
}
