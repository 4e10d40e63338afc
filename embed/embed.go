package embed

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/embed/embedder"
	"github.com/toolsrv/toolsrv/embed/ollama"
)

// The embedder contract (package embedder), under the names the rest of
// toolsrv uses.
type (
	Embedder     = embedder.Embedder
	CatalogAware = embedder.CatalogAware
	Fitted       = embedder.Fitted
)

// Names of the embedders Open knows.
const (
	Builtin = "builtin"
	Ollama  = "ollama"
)

// Options configure Open. The zero value opens the built-in embedder.
type Options struct {
	// Model is the Ollama model (ollama.DefaultModel when empty); the
	// built-in embedder has one model, in the binary.
	Model string
	// Timeout bounds each request to an embedding server (60 s).
	Timeout time.Duration
	// Getenv reads OLLAMA_HOST (os.Getenv when nil).
	Getenv func(string) string
	Logger *slog.Logger
}

// Open makes the embedder called name: "builtin" (or "", the default: no
// network, no download) or "ollama" (an Ollama server's /api/embed). It does
// not contact a server.
func Open(name string, o Options) (Embedder, error) {
	var e Embedder
	var err error
	switch name {
	case Builtin, "":
		e, err = builtin.New()
	case Ollama:
		e, err = ollama.New(ollama.Options{Getenv: o.Getenv, Model: o.Model, Timeout: o.Timeout, Logger: o.Logger})
	default:
		return nil, fmt.Errorf("unknown embedder %q: use one of %s", name, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Names lists the embedders Open knows, for flag help and errors.
func Names() []string { return []string{Builtin, Ollama} }
