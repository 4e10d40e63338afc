package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/registry"
)

// MaxConfigSize is the largest configuration file read.
const MaxConfigSize = 4 << 20

// Transports a server entry may name in "type" (or "transport").
const (
	Stdio = "stdio"
	HTTP  = "http" // streamable HTTP
	SSE   = "sse"  // the 2024-11-05 HTTP+SSE transport
)

// Config is an MCP client configuration file: the servers whose tools
// join the catalog, in the format Claude Desktop, Claude Code, Cursor and
// VS Code already use.
type Config struct {
	// File is where it was read from.
	File string
	// Servers are the usable entries, by name.
	Servers []ServerConfig
	// Problems are the entries that could not be used (each names its
	// server) and warnings (Warning set): unknown keys, disabled servers.
	Problems []ConfigProblem
}

// ConfigProblem is what is wrong with one server's entry.
type ConfigProblem struct {
	Server  string
	Msg     string
	Warning bool
}

func (p ConfigProblem) Error() string { return fmt.Sprintf("mcp server %s: %s", p.Server, p.Msg) }

// ServerConfig is one entry of "mcpServers".
type ServerConfig struct {
	Name string
	// File is the configuration file it is an entry of (absolute when
	// read by LoadConfig): with Name, what its tools are pinned under.
	File string
	// Transport is Stdio, HTTP or SSE.
	Transport string

	// Stdio: Command is resolved to an absolute path (a bare name on
	// $PATH when the configuration is read); Args and Env as given; Dir
	// is the working directory ("cwd"; default its private temporary
	// directory).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// Sandbox is what the server may do beyond a tool's defaults;
	// Unsandboxed is "sandbox": false (which needs the bypass broker's
	// approval at each start).
	Sandbox     SandboxConfig
	Unsandboxed bool

	// HTTP and SSE: URL and Headers.
	URL     string
	Headers map[string]string
	// OAuth is how toolsrv gets access tokens for an http server that asks
	// for them ("oauth"); nil for stdio and sse servers, for "oauth": false,
	// and for an entry whose "headers" carry an Authorization header.
	OAuth *OAuthConfig

	// Timeout bounds one call of its tools ("timeout"; 0: the caller's
	// default, 60 s); StartTimeout bounds starting it: initialize and the
	// first tools/list ("startTimeout"; 0: the provider's default).
	Timeout      time.Duration
	StartTimeout time.Duration

	// MaxTools bounds how many of its tools are taken ("maxTools"; 0:
	// DefaultMaxTools): the rest are dropped, with one warning.
	MaxTools int
	// TrustNewTools takes a tool the server adds after its first listing
	// without the owner's approval ("trustNewTools"); by default it is
	// held like a tool whose definition changed (see Pins).
	TrustNewTools bool
}

// SandboxConfig is an entry's "sandbox" object.
type SandboxConfig struct {
	// Network lets the server use the network (TCP, UDP).
	Network bool `json:"network"`
	// Read and Write are extra paths it may read, and read and write
	// (absolute, or relative to the configuration file's directory; ~/
	// is the home directory). They must exist.
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// Describe is the server as a user would recognise it: "mcp server fs
// (stdio: /usr/bin/npx -y @modelcontextprotocol/server-filesystem /srv)".
func (s ServerConfig) Describe() string {
	switch s.Transport {
	case Stdio:
		return fmt.Sprintf("mcp server %s (stdio: %s)", s.Name, strings.Join(append([]string{s.Command}, s.Args...), " "))
	default:
		return fmt.Sprintf("mcp server %s (%s: %s)", s.Name, s.Transport, s.URL)
	}
}

// PackageRunner is the package runner a stdio server's command is
// ("npx", "uvx", "pipx run", "bunx", "pnpm dlx", ...: programs that
// download the package they run), or "".
func (s ServerConfig) PackageRunner() string {
	if s.Transport != Stdio {
		return ""
	}
	first := ""
	if len(s.Args) > 0 {
		first = s.Args[0]
	}
	switch base := filepath.Base(s.Command); base {
	case "npx", "uvx", "bunx", "pnpx":
		return base
	case "pipx", "pnpm", "yarn", "npm", "bun":
		if (base == "pipx" && first == "run") || ((base == "pnpm" || base == "yarn") && first == "dlx") ||
			(base == "npm" && first == "exec") || (base == "bun" && first == "x") {
			return base + " " + first
		}
	case "uv":
		if len(s.Args) > 1 && s.Args[0] == "tool" && s.Args[1] == "run" {
			return "uv tool run"
		}
	}
	return ""
}

// NetworkHint is what to do about a stdio server run by a package runner
// in a sandbox without network (it likely cannot download its package),
// or "".
func (s ServerConfig) NetworkHint() string {
	r := s.PackageRunner()
	if r == "" || s.Sandbox.Network || s.Unsandboxed {
		return ""
	}
	return fmt.Sprintf("its command runs %q, which downloads the server's package, and its sandbox has no network: "+
		"it likely needs \"sandbox\": {\"network\": true} in its entry of the mcp config (or install the package and point \"command\" at the installed program)", r)
}

// serverKeys are the keys an entry may have; others are warned about
// (clients add their own, such as "autoApprove").
var serverKeys = []string{"args", "command", "cwd", "disabled", "env", "headers", "maxTools", "oauth", "sandbox", "startTimeout", "timeout", "transport", "trustNewTools", "type", "url"}

// LoadConfig reads an MCP configuration file. A file that cannot be read
// or parsed is an error; an entry that cannot be used is a problem of
// that server, and the other servers are still configured. getenv and
// lookPath resolve "~" and bare commands (nil: os.Getenv, exec.LookPath).
func LoadConfig(path string, getenv func(string) string, lookPath func(string) (string, error)) (*Config, error) {
	data, err := fileio.ReadRegular(path, MaxConfigSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("mcp config %s does not exist: %w (write {\"mcpServers\": {NAME: {\"command\": ..., \"args\": [...]}}} there, or fix --mcp-config)", path, err)
		}
		return nil, fmt.Errorf("mcp config %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(abs, data, getenv, lookPath)
}

// ParseConfig parses the contents of a configuration file read from file.
func ParseConfig(file string, data []byte, getenv func(string) string, lookPath func(string) (string, error)) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("mcp config %s: %s", file, jsonError(data, err))
	}
	if top == nil {
		return nil, fmt.Errorf("mcp config %s: the file must hold a JSON object {\"mcpServers\": {...}}", file)
	}
	raw, ok := top["mcpServers"]
	if !ok {
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("mcp config %s: no \"mcpServers\" object (keys: %s); the file must look like {\"mcpServers\": {NAME: {\"command\": ..., \"args\": [...]}}}", file, strings.Join(keys, ", "))
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil || servers == nil {
		return nil, fmt.Errorf("mcp config %s: \"mcpServers\" must be an object of NAME: {server}", file)
	}
	cfg := &Config{File: file}
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		sc, problems, err := parseServer(file, name, servers[name], getenv, lookPath)
		cfg.Problems = append(cfg.Problems, problems...)
		if err != nil {
			cfg.Problems = append(cfg.Problems, ConfigProblem{Server: name, Msg: err.Error()})
			continue
		}
		if sc != nil {
			cfg.Servers = append(cfg.Servers, *sc)
		}
	}
	return cfg, nil
}

// jsonError says where data stops being JSON.
func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("not valid JSON at line %d: %v (`jq . FILE` points at it)", 1+bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")), se)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("the file must hold a JSON object {\"mcpServers\": {...}}, not %s", te.Value)
	}
	return "not valid JSON: " + err.Error()
}

// parseServer parses one entry. A nil config with no error is a disabled
// server.
func parseServer(file, name string, raw json.RawMessage, getenv func(string) string, lookPath func(string) (string, error)) (*ServerConfig, []ConfigProblem, error) {
	if err := registry.ValidName(name); err != nil || strings.Contains(name, registry.ProviderSep) {
		return nil, nil, fmt.Errorf("the name must be a valid tool name (letters, digits, _ . -, at most 128, no %q): its tools are named %s%sTOOL", registry.ProviderSep, name, registry.ProviderSep)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, nil, errors.New("the entry must be an object such as {\"command\": \"npx\", \"args\": [...]} or {\"url\": \"http://...\"}")
	}
	var problems []ConfigProblem
	for k := range m {
		known := false
		for _, s := range serverKeys {
			known = known || k == s
		}
		if !known {
			problems = append(problems, ConfigProblem{Server: name, Warning: true, Msg: fmt.Sprintf("unknown key %q ignored (toolsrv reads %s)", k, strings.Join(serverKeys, ", "))})
		}
	}
	field := func(key string, v any) error {
		r, ok := m[key]
		if !ok || string(r) == "null" {
			return nil
		}
		if err := json.Unmarshal(r, v); err != nil {
			return fmt.Errorf("%q: %v", key, typeMsg(err))
		}
		return nil
	}
	var disabled bool
	if err := field("disabled", &disabled); err != nil {
		return nil, problems, err
	}
	if disabled {
		return nil, append(problems, ConfigProblem{Server: name, Warning: true, Msg: "disabled (\"disabled\": true): not started"}), nil
	}
	sc := &ServerConfig{Name: name, File: file}
	var typ, transport string
	var timeout, startTimeout json.RawMessage
	for _, f := range []struct {
		key string
		v   any
	}{{"type", &typ}, {"transport", &transport}, {"command", &sc.Command}, {"args", &sc.Args}, {"env", &sc.Env},
		{"cwd", &sc.Dir}, {"url", &sc.URL}, {"headers", &sc.Headers}, {"timeout", &timeout}, {"startTimeout", &startTimeout},
		{"maxTools", &sc.MaxTools}, {"trustNewTools", &sc.TrustNewTools}} {
		if err := field(f.key, f.v); err != nil {
			return nil, problems, err
		}
	}
	if typ == "" {
		typ = transport
	}
	switch strings.ToLower(typ) {
	case "":
		switch {
		case sc.Command != "" && sc.URL != "":
			return nil, problems, errors.New("both \"command\" and \"url\": give one (a command for a local server, a url for a remote one)")
		case sc.Command != "":
			sc.Transport = Stdio
		case sc.URL != "":
			sc.Transport = HTTP
		default:
			return nil, problems, errors.New("neither \"command\" nor \"url\": give the command that starts the server, or its url")
		}
	case "stdio":
		sc.Transport = Stdio
	case "http", "streamable-http", "streamablehttp", "streamable_http":
		sc.Transport = HTTP
	case "sse":
		sc.Transport = SSE
	default:
		return nil, problems, fmt.Errorf("unknown transport %q: use \"stdio\" (with \"command\"), \"http\" (streamable HTTP, with \"url\") or \"sse\" (with \"url\")", typ)
	}
	var err error
	if sc.Timeout, err = parseDuration("timeout", timeout); err != nil {
		return nil, problems, err
	}
	if sc.StartTimeout, err = parseDuration("startTimeout", startTimeout); err != nil {
		return nil, problems, err
	}
	if sc.MaxTools < 0 {
		return nil, problems, fmt.Errorf("\"maxTools\" %d: want a positive number of tools (default %d)", sc.MaxTools, DefaultMaxTools)
	}
	base := filepath.Dir(file)
	switch sc.Transport {
	case Stdio:
		if sc.Command == "" {
			return nil, problems, errors.New("a stdio server needs \"command\"")
		}
		if sc.URL != "" || len(sc.Headers) > 0 || m["oauth"] != nil {
			return nil, problems, errors.New("\"url\", \"headers\" and \"oauth\" are for http and sse servers, not stdio ones")
		}
		if sc.Command, err = resolveCommand(sc.Command, base, getenv, lookPath); err != nil {
			return nil, problems, err
		}
		if sc.Dir != "" {
			if sc.Dir, err = existingPath("cwd", sc.Dir, base, getenv); err != nil {
				return nil, problems, err
			}
		}
		if err := parseSandbox(m["sandbox"], sc, base, getenv); err != nil {
			return nil, problems, err
		}
		if hint := sc.NetworkHint(); hint != "" {
			problems = append(problems, ConfigProblem{Server: name, Warning: true, Msg: hint})
		}
	default:
		if sc.URL == "" {
			return nil, problems, fmt.Errorf("a %s server needs \"url\"", sc.Transport)
		}
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, problems, fmt.Errorf("\"url\" %q: want an http:// or https:// URL", sc.URL)
		}
		if sc.Command != "" || len(sc.Args) > 0 || len(sc.Env) > 0 {
			return nil, problems, fmt.Errorf("\"command\", \"args\" and \"env\" are for stdio servers, not %s ones", sc.Transport)
		}
		if _, ok := m["sandbox"]; ok {
			problems = append(problems, ConfigProblem{Server: name, Warning: true, Msg: "\"sandbox\" is ignored for a remote server: it does not run here"})
		}
		if sc.OAuth, err = parseOAuth(m["oauth"], sc, getenv); err != nil {
			return nil, problems, err
		}
	}
	return sc, problems, nil
}

// parseSandbox reads "sandbox": false, or an object of SandboxConfig.
func parseSandbox(raw json.RawMessage, sc *ServerConfig, base string, getenv func(string) string) error {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0 || string(t) == "null" || string(t) == "true":
		return nil
	case string(t) == "false":
		sc.Unsandboxed = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc.Sandbox); err != nil {
		return fmt.Errorf("\"sandbox\": %v; want false or {\"network\": bool, \"read\": [paths], \"write\": [paths]}", typeMsg(err))
	}
	for _, list := range []*[]string{&sc.Sandbox.Read, &sc.Sandbox.Write} {
		for i, p := range *list {
			abs, err := existingPath("sandbox", p, base, getenv)
			if err != nil {
				return err
			}
			(*list)[i] = abs
		}
	}
	return nil
}

// resolveCommand makes command absolute: a path as given (relative to
// the configuration file's directory), a bare name from $PATH.
func resolveCommand(command, base string, getenv func(string) string, lookPath func(string) (string, error)) (string, error) {
	if !strings.Contains(command, "/") && !strings.HasPrefix(command, "~") {
		p, err := lookPath(command)
		if err != nil {
			return "", fmt.Errorf("command %q is not on $PATH: install it, or give its absolute path", command)
		}
		if !filepath.IsAbs(p) {
			if p, err = filepath.Abs(p); err != nil {
				return "", err
			}
		}
		return p, nil
	}
	p := expand(command, base, getenv)
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("command %s: %w", p, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("command %s is not an executable file", p)
	}
	return p, nil
}

// existingPath expands p (~, relative to base) and checks it exists.
func existingPath(key, p, base string, getenv func(string) string) (string, error) {
	abs := expand(p, base, getenv)
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%q path %s: %w (the paths a server is given must exist)", key, abs, err)
	}
	return abs, nil
}

func expand(p, base string, getenv func(string) string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// parseDuration reads a duration given as a string ("30s") or a number
// of seconds.
func parseDuration(key string, raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil && secs > 0 {
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%q %s: want a positive duration such as \"30s\" or a number of seconds", key, raw)
}

// typeMsg shortens a JSON type error.
func typeMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("want %s, not %s", te.Type, te.Value)
	}
	return err.Error()
}
