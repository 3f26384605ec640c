package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is a fleet's servers: what Load and Parse read from an mcp.json,
// or what a program builds itself. Its strings may hold references
// (${env:NAME}, ${NAME:-default}, ${input:id}, ...), expanded when the
// fleet starts; they stay as written in the Config, so that printing it
// prints no secret.
//
// A Config is a plain value: safe for concurrent reading, not for writing
// while another goroutine reads it.
type Config struct {
	// Servers, by name. The name prefixes its tools' names.
	Servers map[string]ServerConfig
	// Inputs are VS Code's "inputs": values the editor asks the user for,
	// which ${input:id} refers to. The fleet asks no one: its Resolver
	// (WithResolver) is asked for ${input:id}, with scheme "input".
	Inputs []Input
}

// Input is one of VS Code's "inputs". A plain value.
type Input struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// ServerConfig is one server. The fields are mcp.json's (SEP-2633's, Claude
// Code's, VS Code's) and a few of the fleet's own. A plain value, safe for
// concurrent reading.
type ServerConfig struct {
	// Type is "stdio" (client.NewStdio); "http" (or "streamable-http",
	// "streamable_http", "streamableHttp": client.New); or "sse" (the
	// 2024-11-05 HTTP+SSE transport: client.NewSSE). Empty: stdio if
	// Command is set, http if URL is.
	Type string

	// Command, Args, Env and Cwd start a stdio server. The process gets the
	// few variables client.NewStdio passes (HOME, PATH, ...) plus Env.
	Command string
	Args    []string
	Env     map[string]string // redacted when printed or logged
	Cwd     string

	// URL and Headers reach an HTTP server. Headers go on every request
	// the server's client sends.
	URL     string
	Headers map[string]string // redacted when printed or logged
	OAuth   *OAuthConfig

	// Disabled leaves the server out of the fleet.
	Disabled bool
	// Required makes Start fail while the server is not ready.
	Required bool
	// KeepAlive is the client's keepalive interval (client.WithKeepAlive);
	// 0: the client's default.
	KeepAlive time.Duration
	// Timeout bounds each call (client.WithCallTimeout) and each attempt
	// to connect; 0: the client's default, and 30 s to connect.
	Timeout time.Duration
	// PoolSize is client.WithPoolSize; 0: the client's default.
	PoolSize int
	// AllowedTools, if not empty, are the only tools of the server listed
	// and called (its own names). DisabledTools are never listed or
	// called.
	AllowedTools  []string
	DisabledTools []string
}

// OAuthConfig is mcp.json's "oauth": the client's OAuth settings for the
// server (client.WithOAuth). A plain value.
type OAuthConfig struct {
	ClientID    string   `json:"clientId"`
	Scopes      []string `json:"scopes"`
	RedirectURI string   `json:"redirectUri"`
}

// ConfigError is a config that cannot be used: it names the server and the
// field (as mcp.json spells it: "url", "headers.Authorization", "args[1]").
// A plain value.
type ConfigError struct {
	Server string // "" for the file as a whole
	Field  string
	Err    error
}

func (e *ConfigError) Error() string {
	switch {
	case e.Server == "" && e.Field == "":
		return "fleet: " + e.Err.Error()
	case e.Server == "":
		return fmt.Sprintf("fleet: %s: %v", e.Field, e.Err)
	case e.Field == "":
		return fmt.Sprintf("fleet: server %q: %v", e.Server, e.Err)
	}
	return fmt.Sprintf("fleet: server %q: field %q: %v", e.Server, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Load reads the mcp.json at path (Parse).
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("fleet: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// fileJSON is an mcp.json: Claude's, Cursor's and SEP-2633's mcpServers,
// or VS Code's servers and inputs.
type fileJSON struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	Servers    map[string]json.RawMessage `json:"servers"`
	Inputs     []Input                    `json:"inputs"`
}

type serverJSON struct {
	Type          string            `json:"type"`
	Command       string            `json:"command"`
	Args          []string          `json:"args"`
	Env           map[string]string `json:"env"`
	Cwd           string            `json:"cwd"`
	URL           string            `json:"url"`
	Headers       map[string]string `json:"headers"`
	OAuth         *OAuthConfig      `json:"oauth"`
	Disabled      bool              `json:"disabled"`
	Required      bool              `json:"required"`
	KeepAlive     json.RawMessage   `json:"keepAlive"`
	Timeout       json.RawMessage   `json:"timeout"`
	PoolSize      int               `json:"poolSize"`
	AllowedTools  []string          `json:"allowedTools"`
	DisabledTools []string          `json:"disabledTools"`
}

// Parse reads an mcp.json: JSON, or JSONC (comments and trailing commas,
// as VS Code writes). It checks every server (Config.Check), expanding the
// environment's variables to find those missing; references to other
// schemes wait for the resolver, at Start.
func Parse(data []byte) (Config, error) {
	clean := stripJSONC(data)
	var f fileJSON
	if err := json.Unmarshal(clean, &f); err != nil {
		return Config{}, &ConfigError{Err: syntaxError(clean, err)}
	}
	if f.MCPServers != nil && f.Servers != nil {
		return Config{}, &ConfigError{Field: "servers", Err: errors.New(`both "mcpServers" and "servers" in one file; use one`)}
	}
	raw := f.MCPServers
	if raw == nil {
		raw = f.Servers
	}
	if raw == nil {
		return Config{}, &ConfigError{Field: "mcpServers", Err: errors.New(`no "mcpServers" (or VS Code's "servers") object`)}
	}
	cfg := Config{Servers: make(map[string]ServerConfig, len(raw)), Inputs: f.Inputs}
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		var s serverJSON
		dec := json.NewDecoder(bytes.NewReader(raw[name]))
		if err := dec.Decode(&s); err != nil {
			field := ""
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				field = te.Field
				err = fmt.Errorf("a JSON %s where a %s belongs", te.Value, te.Type)
			}
			return Config{}, &ConfigError{Server: name, Field: field, Err: err}
		}
		sc := ServerConfig{
			Type: s.Type, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
			URL: s.URL, Headers: s.Headers, OAuth: s.OAuth, Disabled: s.Disabled, Required: s.Required,
			PoolSize: s.PoolSize, AllowedTools: s.AllowedTools, DisabledTools: s.DisabledTools,
		}
		var err error
		if sc.KeepAlive, err = duration(s.KeepAlive); err != nil {
			return Config{}, &ConfigError{Server: name, Field: "keepAlive", Err: err}
		}
		if sc.Timeout, err = duration(s.Timeout); err != nil {
			return Config{}, &ConfigError{Server: name, Field: "timeout", Err: err}
		}
		cfg.Servers[name] = sc
	}
	if err := cfg.Check(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// syntaxError says where malformed JSON is, by line and column.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineOf(data, se.Offset)
		return fmt.Errorf("malformed JSON at line %d, column %d: %w", line, col, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line, _ := lineOf(data, te.Offset)
		return fmt.Errorf("%q at line %d: a JSON %s where a %s belongs", te.Field, line, te.Value, te.Type)
	}
	return err
}

// duration reads a Go duration string ("30s", "1m30s") or a number of
// seconds (30, 0.5, "30").
func duration(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return checkDuration(time.Duration(secs * float64(time.Second)))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, errors.New(`want a duration such as "30s", or a number of seconds`)
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		return checkDuration(time.Duration(secs * float64(time.Second)))
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf(`want a duration such as "30s", or a number of seconds: %w`, err)
	}
	return checkDuration(d)
}

func checkDuration(d time.Duration) (time.Duration, error) {
	if d < 0 {
		return 0, errors.New("negative")
	}
	return d, nil
}

// The transports a server's type names.
const (
	transportStdio = "stdio"
	transportHTTP  = "http"
	transportSSE   = "sse"
)

// transport is the server's transport, from Type or, without one, from
// Command or URL.
func (s ServerConfig) transport() (string, *ConfigError) {
	switch s.Type {
	case "stdio":
		return transportStdio, nil
	case "http", "streamable-http", "streamable_http", "streamableHttp":
		return transportHTTP, nil
	case "sse":
		return transportSSE, nil
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return "", &ConfigError{Field: "url", Err: errors.New(`both "command" and "url": a server is one or the other (set "type")`)}
		case s.Command != "":
			return transportStdio, nil
		case s.URL != "":
			return transportHTTP, nil
		}
		return "", &ConfigError{Field: "command", Err: errors.New(`neither "command" nor "url"`)}
	}
	return "", &ConfigError{Field: "type", Err: fmt.Errorf(`unknown type %q: want "stdio", "http" (or "streamable-http") or "sse"`, s.Type)}
}

// Check reports the first problem of the config: a server that is neither
// stdio nor HTTP or both, a field of one on the other, a malformed or
// missing variable. Disabled servers are checked too.
func (c Config) Check() error {
	if len(c.Servers) == 0 {
		return &ConfigError{Field: "mcpServers", Err: errors.New("no servers")}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if err := c.Servers[name].check(name, envExpander()); err != nil {
			return err
		}
	}
	return nil
}

func (s ServerConfig) check(name string, x *expander) error {
	fail := func(field string, format string, args ...any) error {
		return &ConfigError{Server: name, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if name == "" {
		return fail("", "a server with an empty name")
	}
	t, cerr := s.transport()
	if cerr != nil {
		cerr.Server = name
		return cerr
	}
	switch t {
	case transportStdio:
		switch {
		case s.Command == "":
			return fail("command", `a stdio server needs "command"`)
		case s.URL != "":
			return fail("url", `"url" on a stdio server`)
		case len(s.Headers) > 0:
			return fail("headers", `"headers" on a stdio server`)
		case s.OAuth != nil:
			return fail("oauth", `"oauth" on a stdio server`)
		}
	default:
		switch {
		case s.URL == "":
			return fail("url", `an %s server needs "url"`, t)
		case s.Command != "":
			return fail("command", `"command" on an %s server`, t)
		case len(s.Args) > 0:
			return fail("args", `"args" on an %s server`, t)
		case len(s.Env) > 0:
			return fail("env", `"env" on an %s server`, t)
		case s.Cwd != "":
			return fail("cwd", `"cwd" on an %s server`, t)
		}
	}
	if s.PoolSize < 0 {
		return fail("poolSize", "negative")
	}
	if s.KeepAlive < 0 {
		return fail("keepAlive", "negative")
	}
	if s.Timeout < 0 {
		return fail("timeout", "negative")
	}
	_, err := s.expand(name, x)
	return err
}

// expand returns the server with its references expanded, or an error
// naming the field and the variable (never a value).
func (s ServerConfig) expand(name string, x *expander) (ServerConfig, error) {
	var err error
	one := func(field, v string) string {
		if err != nil {
			return v
		}
		out, e := x.expand(v)
		if e != nil {
			err = &ConfigError{Server: name, Field: field, Err: e}
		}
		return out
	}
	out := s
	out.Type = one("type", s.Type)
	out.Command = one("command", s.Command)
	out.Cwd = one("cwd", s.Cwd)
	out.URL = one("url", s.URL)
	if s.Args != nil {
		out.Args = make([]string, len(s.Args))
		for i, a := range s.Args {
			out.Args[i] = one(fmt.Sprintf("args[%d]", i), a)
		}
	}
	expandMap := func(field string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		o := make(map[string]string, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			o[k] = one(field+"."+k, m[k])
		}
		return o
	}
	out.Env = expandMap("env", s.Env)
	out.Headers = expandMap("headers", s.Headers)
	if s.OAuth != nil {
		o := *s.OAuth
		o.ClientID = one("oauth.clientId", o.ClientID)
		o.RedirectURI = one("oauth.redirectUri", o.RedirectURI)
		o.Scopes = slices.Clone(o.Scopes)
		for i := range o.Scopes {
			o.Scopes[i] = one(fmt.Sprintf("oauth.scopes[%d]", i), o.Scopes[i])
		}
		out.OAuth = &o
	}
	return out, err
}

// redacted stands for a secret's value wherever a config is shown.
const redacted = "[REDACTED]"

func redactMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	o := make(map[string]string, len(m))
	for k := range m {
		o[k] = redacted
	}
	return o
}

// String shows the server with the values of Env and Headers redacted.
// Format's %v, %+v and %#v print the same.
func (s ServerConfig) String() string {
	var b strings.Builder
	b.WriteString("{")
	add := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%v", k, v)
	}
	if s.Type != "" {
		add("type", s.Type)
	}
	if s.Command != "" {
		add("command", s.Command)
	}
	if len(s.Args) > 0 {
		add("args", s.Args)
	}
	if len(s.Env) > 0 {
		add("env", redactMap(s.Env))
	}
	if s.Cwd != "" {
		add("cwd", s.Cwd)
	}
	if s.URL != "" {
		add("url", s.URL)
	}
	if len(s.Headers) > 0 {
		add("headers", redactMap(s.Headers))
	}
	if s.OAuth != nil {
		add("oauth", *s.OAuth)
	}
	if s.Disabled {
		add("disabled", true)
	}
	if s.Required {
		add("required", true)
	}
	if s.KeepAlive != 0 {
		add("keepAlive", s.KeepAlive)
	}
	if s.Timeout != 0 {
		add("timeout", s.Timeout)
	}
	if s.PoolSize != 0 {
		add("poolSize", s.PoolSize)
	}
	if len(s.AllowedTools) > 0 {
		add("allowedTools", s.AllowedTools)
	}
	if len(s.DisabledTools) > 0 {
		add("disabledTools", s.DisabledTools)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String: %#v redacts too.
func (s ServerConfig) GoString() string { return "fleet.ServerConfig" + s.String() }

// LogValue is String: slog redacts too.
func (s ServerConfig) LogValue() slog.Value { return slog.StringValue(s.String()) }

// String shows every server, redacted (ServerConfig.String).
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("{")
	for i, name := range slices.Sorted(maps.Keys(c.Servers)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s", name, c.Servers[name].String())
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String: %#v redacts too.
func (c Config) GoString() string { return "fleet.Config" + c.String() }

// LogValue is String: slog redacts too.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }
