package engine

import (
	"context"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// Frontend is what a transport asks of toolsrv: rank tools for a request,
// call one, list the catalog. *Engine and a session's *Overlay are
// Frontends; the 9P server, the MCP server and the CLI speak to one. A new
// transport (HTTP/JSON, say) is a package that reads Requests and
// CallRequests, writes Answers and CallResults, and asks a Frontend; see
// the package example.
type Frontend interface {
	Rank(ctx context.Context, r Request) (Answer, error)
	Call(ctx context.Context, c CallRequest) (*exec.Result, error)
	Catalog() *registry.Catalog
}

var (
	_ Frontend = (*Engine)(nil)
	_ Frontend = (*Overlay)(nil)
)
