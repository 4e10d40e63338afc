// Package embed turns text into vectors for the ranking index.
//
// Open makes an embedder by name: "builtin" (the default: the static table
// in embed/builtin, pure Go, no network, deterministic) or "ollama" (an
// Ollama server, embed/ollama). Embedder, CatalogAware and Fitted are the
// contract the index depends on (declared in embed/embedder, which
// implementations import). A new embedder is a package that implements
// embedder.Embedder and one case in Open.
package embed
