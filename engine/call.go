package engine

import (
	"context"
	"errors"

	"github.com/toolsrv/toolsrv/exec"
)

// ErrNoRunner is returned by Call on an engine made without Options.Runner.
var ErrNoRunner = errors.New("this engine runs no tools (Options.Runner is not set)")

// Call runs tool name of the current catalog with args (a JSON object) as
// the runner does: arguments checked against its schema, sandboxed,
// limited. A missing or hidden tool is a *registry.LookupError.
func (e *Engine) Call(ctx context.Context, name string, args []byte, cc exec.CallContext) (*exec.Result, error) {
	if e.runner == nil {
		return nil, ErrNoRunner
	}
	t, err := e.reg.Catalog().Lookup(name)
	if err != nil {
		return nil, err
	}
	return e.runner.Call(ctx, t, args, cc)
}
