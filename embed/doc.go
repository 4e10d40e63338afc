// Package embed turns text into vectors for the ranking index.
//
// Embedder is the one interface the index depends on. Implementations: the
// built-in static embedder (default: pure Go, no network, deterministic) and
// Ollama (through github.com/ollama/ollama/api).
package embed
