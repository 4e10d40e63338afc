// Package builtin is toolsrv's default embedder: a static token → vector
// table trained offline (see train/embedding and embed/MODEL.md) and shipped in
// the binary with go:embed. It needs no network and no model download.
//
// A text is analysed with text.Table (split on non-alphanumerics and
// camelCase, lowercased, stopwords dropped, Porter-stemmed: the table is
// keyed by those terms, so that analysis is frozen with the table), each
// term is looked up in the table
// (words the table lacks are built from hashed character n-grams), and the
// rows are summed with weights and L2-normalised. Fit adapts the weights to
// the catalog being indexed (catalog IDF), which is what the index should use.
package builtin
