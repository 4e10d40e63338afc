package embedder

import "context"

// Embedder maps texts to L2-normalised vectors of a fixed dimension.
//
// Implementations must be safe for concurrent use, honour ctx deadlines, and
// never return a zero or NaN vector without an error.
type Embedder interface {
	// ID names the embedder and its model, e.g. "builtin/v1" or
	// "ollama/nomic-embed-text". Cached vectors are keyed by it.
	ID() string
	// Dim is the vector dimension, or 0 when not known until the first call.
	Dim() int
	// EmbedDocuments embeds tool documents, in order, batching as it sees fit.
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	// EmbedQuery embeds one user message.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// CatalogAware is an Embedder that adapts to the catalog it indexes (for
// example by weighting words with the catalog's own IDF). The index calls Fit
// when it builds from scratch and again when enough of the catalog has changed;
// it persists State beside the vectors and calls Restore on restart, so that a
// restart with nothing changed embeds nothing.
type CatalogAware interface {
	Embedder
	// Fit returns an embedder adapted to the catalog's document texts.
	Fit(ctx context.Context, docs []string) (Fitted, error)
	// Restore rebuilds a fitted embedder from a State it produced before.
	Restore(state []byte) (Fitted, error)
}

// Fitted is an embedder adapted to one catalog. Its ID includes a digest of
// the fitted state, so vectors made by different fits never mix.
type Fitted interface {
	Embedder
	State() []byte
}
