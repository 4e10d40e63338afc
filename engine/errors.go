package engine

import (
	"errors"
	"syscall"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// CallErrorKind is one kind of call failure as every front end reports
// it: its name (the CLI's and the wire's "kind"), the errno of a 9P call
// transaction it fails, and whether the tool ran (its output then comes
// with the error: 9P answers with the result instead of an errno, MCP
// puts the output before the error in its error result).
type CallErrorKind struct {
	Kind  error
	Name  string
	Errno syscall.Errno
	Ran   bool
}

// CallErrorKinds is the one table of call failures. MCP reports every one
// of them as an error result (isError), never as a protocol error: the
// model is meant to read why.
var CallErrorKinds = []CallErrorKind{
	{exec.ErrExit, "tool failed", syscall.EIO, true},
	{exec.ErrInvalidArgs, "invalid arguments", syscall.EINVAL, false},
	{exec.ErrBadCallContext, "bad call context", syscall.EINVAL, false},
	{exec.ErrTimeout, "timed out", syscall.ETIMEDOUT, true},
	{exec.ErrCanceled, "canceled", syscall.EINTR, true},
	{exec.ErrBypassRefused, "bypass refused", syscall.EACCES, false},
	{exec.ErrNoSandbox, "no sandbox available", syscall.EPERM, false},
	{exec.ErrSandbox, "sandbox could not be applied", syscall.EPERM, false},
	{exec.ErrStart, "could not start", syscall.ENOEXEC, false},
	{ErrNoRunner, "no runner", syscall.ENOSYS, false},
	{errUnknownTool, "unknown tool", syscall.ENOENT, false},
}

// errUnknownTool stands for a *registry.LookupError in the table.
var errUnknownTool = errors.New("unknown tool")

// KindOf returns the table's entry for err ("other", EIO when none fits).
// The names of exec's kinds are their error texts.
func KindOf(err error) CallErrorKind {
	var le *registry.LookupError
	if errors.As(err, &le) {
		return CallErrorKinds[len(CallErrorKinds)-1]
	}
	for _, k := range CallErrorKinds {
		if errors.Is(err, k.Kind) {
			return k
		}
	}
	return CallErrorKind{Name: "other", Errno: syscall.EIO}
}
