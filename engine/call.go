package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// ErrNoRunner is returned by Call on an engine made without Options.Runner.
var ErrNoRunner = errors.New("this engine runs no tools (Options.Runner is not set)")

// Call runs tool name of the current catalog with args (a JSON object) as
// the runner does: arguments checked against its schema, sandboxed,
// limited. A missing or hidden tool is a *registry.LookupError.
func (e *Engine) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	t, err := e.reg.Catalog().Lookup(name)
	if err != nil {
		return nil, err
	}
	return e.CallTool(ctx, t, args, cc)
}

// CallTool runs t, a tool of a catalog of this engine: a provided tool
// by its provider (arguments checked against its schema first), any
// other by the runner.
func (e *Engine) CallTool(ctx context.Context, t *registry.Tool, args []byte, cc exec.CallContext) (*exec.Result, error) {
	if t.Provider == "" {
		if e.runner == nil {
			return nil, ErrNoRunner
		}
		return e.runner.Call(ctx, t, args, cc)
	}
	p, ok := e.providers[t.Provider]
	if !ok {
		return nil, &exec.CallError{Tool: t.Name, Kind: exec.ErrStart, Err: fmt.Errorf("%w %q in this engine", errUnknownProvider, t.Provider)}
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if err := t.ValidateArgs(args); err != nil {
		return nil, &exec.CallError{Tool: t.Name, Kind: exec.ErrInvalidArgs, Msg: "nothing was run", Err: err}
	}
	return p.Call(ctx, strings.TrimPrefix(t.Name, t.Provider+registry.ProviderSep), args, cc)
}
