// Package embed turns text into vectors for the ranking index.
//
// Embedders register like database/sql drivers: an embedder's package
// calls Register in its init function with its name and a Driver, and a
// program offers the embedders whose packages it imports. Open makes one by
// name; Drivers lists the names (for flag help and errors). Package engine
// imports toolsrv's two: "builtin" (Default: the static table in
// embed/builtin, pure Go, no network, deterministic) and "ollama" (an
// Ollama server, embed/ollama).
//
// Embedder, CatalogAware and Fitted are the contract the index depends on
// (declared in embed/embedder, which imports nothing). A new embedder is a
// package that implements embedder.Embedder and registers a Driver, plus
// its blank import in engine/embedders.go.
package embed
