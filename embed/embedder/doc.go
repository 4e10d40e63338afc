// Package embedder is the contract between the ranking index and the
// embedders: the Embedder interface and, for embedders that adapt to the
// catalog they index, CatalogAware and Fitted. Embedders (embed/builtin,
// embed/ollama) implement it; package embed re-exports it and opens an
// embedder by name, from the drivers the embedders register. It imports
// nothing, so that every embedder can import it without a cycle.
package embedder
