package embed

import (
	"log/slog"
	"time"

	"github.com/toolsrv/toolsrv/embed/embedder"
)

// The embedder contract (package embedder), under the names the rest of
// toolsrv uses.
type (
	Embedder     = embedder.Embedder
	CatalogAware = embedder.CatalogAware
	Fitted       = embedder.Fitted
)

// Default is the embedder Open makes when no name is given: the built-in
// one (package embed/builtin: no network, no download).
const Default = "builtin"

// Options configure Open. Each embedder reads the fields it has a use for
// and ignores the others.
type Options struct {
	// Model is the model, for embedders that have several ("": the one
	// the driver names in Needs.Model).
	Model string
	// Timeout bounds each request to an embedding server (60 s).
	Timeout time.Duration
	// Getenv reads the environment (os.Getenv when nil): the server's
	// address, for one ($OLLAMA_HOST).
	Getenv func(string) string
	Logger *slog.Logger
}

// Open makes the embedder registered as name ("" is Default). It does not
// contact a server. The name is unknown unless the embedder's package is
// imported: package engine imports every embedder toolsrv has.
func Open(name string, o Options) (Embedder, error) {
	if name == "" {
		name = Default
	}
	d, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.Open(o)
}
