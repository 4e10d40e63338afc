// Package index ranks a catalog's tools for a user message.
//
// Each visible tool becomes one document built from its name (split into
// words), description, keywords, argument names and descriptions, and prompt;
// the short fields weigh more than the long prompt. The index keeps two views
// of the documents:
//
//   - dense vectors from an [embed.Embedder], stored in a chromem-go
//     collection (persisted in a file of our own under the user cache
//     directory, one file per embedder and tool directory set, readable by
//     this user only: files 0600 in a directory made 0700) and mirrored in
//     a flat float32 matrix plus an int8 copy with one scale per row. An
//     embedder whose vectors depend on the text and model alone (Ollama)
//     also keeps every vector it made in its vector library, a chromem-go
//     collection persisted with chromem's own export and shared by every
//     catalog (library.go: what it holds, and why the int8 scan stays
//     beside it). A top-k ranking scans the int8 copy (AVX2 kernel on amd64),
//     bounds every tool's score with the quantisation error, and re-scores
//     exactly every tool that can still reach the top k, so it returns the
//     same tools, order and scores as the exact float32 scan (see quant.go);
//     a full ranking (K = 0) scans the float32 matrix;
//   - a BM25 index over the same fields (BM25F-style field weights).
//
// Rank fuses the two into a score calibrated to [0,1] that means the same
// thing across queries: the lexical part is the share of the query's
// IDF-weighted words a tool matches (1 when it matches every word at least
// once at average length), the dense part is the cosine similarity above the
// query's background (the mean similarity of the query to all tools),
// rescaled so that a cosine of 1 scores 1. Hybrid = α·lexical + (1−α)·dense.
// A tool named verbatim in the message scores 1 and ranks first.
//
// With an embedder of the family the learned last step was trained on (the
// built-in one), a hybrid ranking then re-scores its best candidates with
// that model (package learn, laststep.go): each candidate's score becomes
// the probability that it is the tool the message needs, and
// Ranking.Answerable the probability that any tool serves it, calibrated to
// the catalog: the model's probe requests are ranked against the catalog
// when the index is built and a message's evidence is read against theirs
// (probes.go; their logits are kept in the cache file).
// Query.NoLastStep and Options.NoLastStep give the fixed fusion.
//
// Updates are incremental: vectors are keyed by the embedder's ID and a hash
// of the document text, so a restart with nothing changed embeds nothing and
// one edited tool costs one embedding. Beside the vectors, a lexical cache
// keeps each document's BM25 entry and which document each tool made
// (lexcache.go, docmemo.go), so a restart neither tokenizes nor assembles
// the documents of unchanged tools; the vector file keeps each vector's
// int8 row. Preload fills the index from both files while the registry
// loads, and the first update indexes only what differs (prefill.go).
// Reads keep being served while an update
// embeds. If the embedder fails or misses the caller's deadline, Rank
// answers from the lexical scores alone and marks the answer Degraded.
package index
