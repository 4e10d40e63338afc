package registry

import (
	"encoding/json"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Tier is a tool's context-retention tier: how long an agent keeps the tool
// loaded without using it (hot: always; warm: some turns; cold: one turn).
type Tier string

// Retention tiers.
const (
	Hot  Tier = "hot"
	Warm Tier = "warm"
	Cold Tier = "cold"
)

// Concurrency is a tool's call-concurrency class: parallel (no limit of its
// own), serial (one call at a time) or exclusive (alone among its agent's
// calls).
type Concurrency string

// Concurrency classes.
const (
	Parallel  Concurrency = "parallel"
	Serial    Concurrency = "serial"
	Exclusive Concurrency = "exclusive"
)

// CommandKind says how a tool's command was resolved.
type CommandKind string

// Ways a command is resolved, in the order they are tried.
const (
	CoLocated CommandKind = "co-located" // executable file D/N beside D/N.meta
	Direct    CommandKind = "cmd"        // cmd is an absolute path or a bare name, executed directly
	Shell     CommandKind = "shell"      // cmd is anything else, run through /bin/sh -c
	OnPath    CommandKind = "path"       // N found on $PATH
	// ByProvider: the tool is a provider's (an MCP server's, a remote
	// toolsrv's) and the provider runs it; Argv is empty.
	ByProvider CommandKind = "provider"
)

// Command is what runs when a tool is called. Argv[0] is an absolute path;
// the call's JSON arguments go to standard input, never into Argv.
type Command struct {
	Kind CommandKind `json:"kind"`
	Argv []string    `json:"argv"`
	// Cmd is the cmd field as written (empty for CoLocated and OnPath).
	Cmd string `json:"cmd,omitempty"`
}

// ToolLimits are the resource limits a tool declares ("limits" in its
// .meta); zero fields take the server's defaults.
type ToolLimits struct {
	// Processes is the most processes (threads count) the tool and what it
	// starts may have at once.
	Processes int `json:"processes,omitempty"`
	// Memory is the most private writable memory of each of its processes,
	// in bytes.
	Memory int64 `json:"memory,omitempty"`
	// FileSize is the largest file a process of the call may write, in
	// bytes (RLIMIT_FSIZE).
	FileSize int64 `json:"fileSize,omitempty"`
	// TempSize is the size of the call's private temporary directory
	// ($TMPDIR and $HOME), in bytes.
	TempSize int64 `json:"tempSize,omitempty"`
}

// Tool is one visible, valid tool with its variant resolved. A Tool is
// immutable once published in a Catalog.
type Tool struct {
	Name string `json:"name"`
	// File is the .meta file's absolute path, Dir its directory. For a
	// provided tool, File says where it comes from and Dir is empty.
	File string `json:"file"`
	Dir  string `json:"dir"`
	// Provider names the provider of a provided tool (see Provide); empty
	// for a .meta file's.
	Provider string `json:"provider,omitempty"`

	Description string   `json:"description"`
	Prompt      string   `json:"prompt,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	// Examples are requests the tool serves, in a user's words, from its
	// author: the ranking takes them as past requests that led to it (the
	// usage signal), not as text of the tool.
	Examples []string        `json:"examples,omitempty"`
	Args     json.RawMessage `json:"args"`
	Tier     Tier            `json:"tier"`
	Cmd      string          `json:"cmd,omitempty"`

	ReadOnly bool `json:"readOnly,omitempty"`
	Bypass   bool `json:"bypass,omitempty"`
	Network  bool `json:"network,omitempty"`
	// HostProcesses: the tool sees the host's processes (ps, top, pgrep),
	// not only its own call's; see package exec.
	HostProcesses bool `json:"hostProcesses,omitempty"`
	// Ptrace: the tool traces processes of its own call (a debugger,
	// strace); without it ptrace and process_vm_* are refused to it.
	Ptrace      bool          `json:"ptrace,omitempty"`
	Concurrency Concurrency   `json:"concurrency"`
	Timeout     time.Duration `json:"timeout,omitempty"` // 0: the caller's default
	// Limits are the resource limits the tool asks for (zero: the server's
	// defaults); the server caps them.
	Limits        ToolLimits `json:"limits,omitzero"`
	Scope         string     `json:"scope,omitempty"`
	OutputFormat  string     `json:"outputFormat,omitempty"`
	ResetsCounter bool       `json:"resetsCounter,omitempty"`

	// Extra holds unknown top-level fields, carried through unchanged.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`

	// Variant is the index of the matched variant, or -1 without variants.
	Variant int `json:"variant"`
	// Command is the resolved command.
	Command Command `json:"command"`
	// Warnings are non-fatal remarks (unknown fields, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Hash identifies the tool's definition: it changes when the .meta
	// file, the matched variant or the resolved command changes.
	Hash string `json:"hash"`

	schema *compileJob
}

// Schema is the compiled argument schema; validate call arguments with it
// (ValidateArgs does). A schema known from an earlier run is compiled on
// the first call; one that then fails to compile is an error.
func (t *Tool) Schema() (*jsonschema.Schema, error) {
	if t.schema == nil {
		return nil, nil
	}
	return t.schema.compiled()
}

// ValidateArgs checks a JSON arguments document against the tool's schema and
// returns an error listing every violation.
func (t *Tool) ValidateArgs(args []byte) error { return validateArgs(t, args) }
