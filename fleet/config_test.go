package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/resilientmcp/resilientmcp/client"
)

const claudeFile = `{
  "mcpServers": {
    "github": {
      "url": "https://127.0.0.1:9/mcp",
      "headers": {"Authorization": "Bearer ${env:FLEET_TEST_TOKEN}"},
      "keepAlive": "30s",
      "timeout": 20
    },
    "files": {
      "command": "npx",
      "args": ["-y", "server-filesystem", "${HOME_DIR:-/tmp}"],
      "env": {"API_KEY": "${env:FLEET_TEST_TOKEN | value:none}"},
      "required": true,
      "allowedTools": ["read_file"]
    }
  }
}`

const vscodeFile = `// VS Code's .vscode/mcp.json
{
  "inputs": [
    {"type": "promptString", "id": "token", "description": "a token", "password": true},
  ],
  "servers": {
    /* an HTTP server */
    "github": {
      "type": "http",
      "url": "https://127.0.0.1:9/mcp", // trailing comment
      "headers": {"Authorization": "Bearer ${env:FLEET_TEST_TOKEN}",},
      "keepAlive": 30,
      "timeout": "20s",
    },
    "files": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-filesystem", "${HOME_DIR:-/tmp}",],
      "env": {"API_KEY": "${env:FLEET_TEST_TOKEN | value:none}"},
      "required": true,
      "allowedTools": ["read_file",],
    },
  },
}`

func TestClaudeAndVSCodeFilesLoadTheSame(t *testing.T) {
	t.Setenv("FLEET_TEST_TOKEN", "s3cret")
	dir := t.TempDir()
	load := func(name, text string) Config {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return cfg
	}
	claude, vscode := load("claude.json", claudeFile), load("mcp.json", vscodeFile)
	if len(vscode.Inputs) != 1 || vscode.Inputs[0].ID != "token" || !vscode.Inputs[0].Password {
		t.Errorf("inputs: %+v", vscode.Inputs)
	}
	// Only the types written differ.
	for name, s := range vscode.Servers {
		s.Type = ""
		vscode.Servers[name] = s
	}
	if !reflect.DeepEqual(claude.Servers, vscode.Servers) {
		t.Errorf("Claude's file:\n%#v\nVS Code's:\n%#v", claude, vscode)
	}
	gh := claude.Servers["github"]
	if gh.KeepAlive != 30*time.Second || gh.Timeout != 20*time.Second {
		t.Errorf("durations: %v %v", gh.KeepAlive, gh.Timeout)
	}
	if !claude.Servers["files"].Required {
		t.Error("required not read")
	}
}

func TestBadInputNamesServerAndField(t *testing.T) {
	os.Unsetenv("FLEET_NO_SUCH_VAR")
	for _, tc := range []struct {
		name, file, server, field, says string
	}{
		{"missing variable", `{"mcpServers": {"gh": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${env:FLEET_NO_SUCH_VAR}"}}}}`,
			"gh", "headers.Authorization", "FLEET_NO_SUCH_VAR"},
		{"missing in a chain", `{"mcpServers": {"gh": {"url": "http://127.0.0.1:1/${FLEET_NO_SUCH_VAR | env:FLEET_NO_SUCH_VAR}"}}}`,
			"gh", "url", "FLEET_NO_SUCH_VAR"},
		{"both command and url", `{"mcpServers": {"both": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}}`,
			"both", "url", "command"},
		{"neither", `{"mcpServers": {"none": {"args": ["x"]}}}`, "none", "command", "neither"},
		{"unknown type", `{"mcpServers": {"odd": {"type": "websocket", "url": "ws://127.0.0.1:1"}}}`, "odd", "type", "websocket"},
		{"url on stdio", `{"mcpServers": {"s": {"type": "stdio", "command": "x", "url": "http://127.0.0.1:1/mcp"}}}`, "s", "url", "stdio"},
		{"bad duration", `{"mcpServers": {"s": {"command": "x", "timeout": "soon"}}}`, "s", "timeout", "duration"},
		{"wrong JSON type", `{"mcpServers": {"s": {"command": "x", "args": "not a list"}}}`, "s", "args", "string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if ce.Server != tc.server || ce.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v (server %q field %q), want server %q field %q, saying %q", err, ce.Server, ce.Field, tc.server, tc.field, tc.says)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.server)) {
				t.Errorf("%v does not name the server", err)
			}
		})
	}
}

func TestMalformedJSONSaysItsLine(t *testing.T) {
	file := "{\n  // a comment\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n    \"b\": {\"command\": \"y\"}\n  }\n}\n"
	_, err := Parse([]byte(file))
	if err == nil || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("err = %v, want line 5", err)
	}
}

func TestBothServerKeysIsAnError(t *testing.T) {
	_, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}, "servers": {"b": {"command": "y"}}}`))
	if err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("err = %v", err)
	}
}

func TestJSONCKeepsStringsAndOffsets(t *testing.T) {
	in := `{"a": "http://x//y, ]", /* c */ "b": [1, 2,], // d
"c": "\" // not a comment",}`
	out := stripJSONC([]byte(in))
	if len(out) != len(in) {
		t.Fatalf("length %d, want %d", len(out), len(in))
	}
	want := `{"a": "http://x//y, ]",         "b": [1, 2 ],     
"c": "\" // not a comment" }`
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("FLEET_A", "a")
	t.Setenv("FLEET_EMPTY", "")
	os.Unsetenv("FLEET_UNSET")
	resolve := func(_ context.Context, scheme, ref string) (string, error) {
		if scheme == "fail" {
			return "", errors.New("no")
		}
		return scheme + "=" + ref, nil
	}
	x := &expander{ctx: context.Background(), lookup: os.LookupEnv, resolve: resolve}
	for in, want := range map[string]string{
		"plain":                                "plain",
		"${FLEET_A}":                           "a",
		"x-${env:FLEET_A}-y":                   "x-a-y",
		"${FLEET_UNSET:-dflt}":                 "dflt",
		"${FLEET_EMPTY:-dflt}":                 "dflt",
		"${FLEET_EMPTY}":                       "",
		"${env:FLEET_UNSET | value:lit}":       "lit",
		"${env:FLEET_EMPTY|env:FLEET_A}":       "a",
		"${env:FLEET_A | value:lit}":           "a",
		"${input:token}":                       "input=token",
		"${op://vault/item}":                   "op=//vault/item",
		"${env:FLEET_UNSET | input:tok}":       "input=tok",
		"${FLEET_A}${FLEET_A}":                 "aa",
		"no ${FLEET_A} re-expansion of ${HOME": "",
	} {
		got, err := x.expand(in)
		if want == "" && in != "${FLEET_EMPTY}" {
			if err == nil {
				t.Errorf("%q: %q, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"${FLEET_UNSET}", "${env:FLEET_UNSET}", "${env:FLEET_UNSET | env:FLEET_EMPTY}", "${fail:x}", "${}", "${not a name}"} {
		if got, err := x.expand(in); err == nil {
			t.Errorf("%q: %q, want an error", in, got)
		}
	}
	var mv *MissingVariableError
	if _, err := x.expand("${FLEET_UNSET}"); !errors.As(err, &mv) || mv.Variable != "FLEET_UNSET" {
		t.Errorf("err = %v", err)
	}
	t.Setenv("FLEET_TRICK", "${FLEET_A}")
	if got, _ := x.expand("${FLEET_TRICK}"); got != "${FLEET_A}" {
		t.Errorf("a value was expanded again: %q", got)
	}
}

func TestSecretsAreRedacted(t *testing.T) {
	t.Setenv("FLEET_TEST_TOKEN", "s3cret")
	cfg := Config{Servers: map[string]ServerConfig{
		"h": {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer literal-secret"}},
		"s": {Command: "x", Env: map[string]string{"KEY": "literal-secret"}},
	}}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg, "server", cfg.Servers["h"])
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", cfg.Servers["s"]),
		fmt.Sprintf("%+v", cfg.Servers), fmt.Sprintf("%#v", cfg.Servers["h"]), logged.String()} {
		if strings.Contains(s, "literal-secret") {
			t.Errorf("a secret shown: %s", s)
		}
		if !strings.Contains(s, redacted) {
			t.Errorf("nothing redacted: %s", s)
		}
	}
}

func TestNames(t *testing.T) {
	if got := DefaultToolName("my server", "do.it/now"); got != "my_server__do_it_now" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("x", 100)
	keys := []key{{"a", "search"}, {"b", "search"}, {"a", long}, {"a", "x__y"}, {"a__x", "y"}, {"c", "other"}}
	names := assignNames(keys, DefaultToolName)
	if len(names) != len(keys) {
		t.Fatalf("%d names for %d keys: %v", len(names), len(keys), names)
	}
	byKey := map[key]string{}
	for n, k := range names {
		if len(n) > MaxNameLen {
			t.Errorf("%q is longer than %d", n, MaxNameLen)
		}
		byKey[k] = n
	}
	if byKey[key{"c", "other"}] != "c__other" || byKey[key{"a", "search"}] != "a__search" || byKey[key{"b", "search"}] != "b__search" {
		t.Errorf("names: %v", byKey)
	}
	// "a__x__y" is both a's x__y and a__x's y: both take the hash form.
	if n := byKey[key{"a", "x__y"}]; n == "a__x__y" || n == byKey[key{"a__x", "y"}] {
		t.Errorf("colliding names: %v", byKey)
	}
	// Order does not matter.
	rev := make([]key, len(keys))
	for i, k := range keys {
		rev[len(keys)-1-i] = k
	}
	if again := assignNames(rev, DefaultToolName); !reflect.DeepEqual(again, names) {
		t.Errorf("another order, other names: %v vs %v", again, names)
	}
}

// A server that cannot be built (a reference with no resolver) or reached
// fails alone, saying why, when the fleet starts.
func TestServerThatCannotBeBuiltFailsAlone(t *testing.T) {
	f, err := New(Config{Servers: map[string]ServerConfig{
		"legacy": {Type: "sse", URL: "http://127.0.0.1:1/sse"}, // nobody listens
		"asks":   {Command: "x", Env: map[string]string{"TOKEN": "${input:token}"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.Start(ctx); err != nil {
		t.Fatalf("Start: %v (no server is required)", err)
	}
	st := f.Status()
	if len(st) != 2 || st[0].Name != "asks" || st[1].Name != "legacy" {
		t.Fatalf("status: %+v", st)
	}
	if err := st[0].Err; err == nil || !strings.Contains(err.Error(), "resolver") || !strings.Contains(err.Error(), "env.TOKEN") {
		t.Errorf("asks: %v", err)
	}
	if err := st[1].Err; err == nil || !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("legacy: %v", err)
	}
	if _, err := f.ListTools(ctx); err == nil {
		t.Error("ListTools with no server ready: no error")
	}
}
