// Package embedding builds the built-in embedder's table offline: it collects
// (query-like text, document-like text) pairs from data any Debian machine
// can install (package descriptions, AppStream metadata, man pages, WordNet,
// Go standard library doc comments), trains a static token table with a
// contrastive loss, and writes the int8 table that embed/builtin ships.
//
// It also holds a small evaluation harness (BM25, dense, hybrid over
// labelled corpora) used to choose settings. Command train/cmd/embedding runs
// it (make model); embed/MODEL.md tells how the shipped table was made.
package embedding
