// Package eval measures rankings against labelled corpora: it finds and
// loads corpora (FindCorpora, LoadCorpus, LoadCorpora), scores rankings
// (Score, Measure: Recall@k, NDCG@10, MRR) and offered sets (MeasureOffers),
// averages per-corpus figures with every corpus weighing the same
// (Mean, Macro, MacroOffers), and splits queries and tools by a fixed hash (Share).
//
// It is a leaf: it imports nothing of toolsrv, so that the commands that
// evaluate (toolsrv eval, tune and bench) and the offline trainers (train/)
// use the same corpora and the same figures.
//
// A corpus is a directory C with C/tools/*.meta and C/queries.jsonl, one
// labelled request per line: {"id","query","relevant":[tool names]}; an
// empty list ("relevant": []) marks a request no tool serves, which counts
// only in the offered-set figures (hit, tools offered, "no tool fits"
// recall and precision, accuracy).
//
// Metrics follow the usual definitions with binary relevance: Recall@k =
// |relevant ∩ top k| / |relevant|, NDCG@10 with gains 1, MRR over the whole
// ranking (reciprocal rank of the first relevant tool, 0 if none).
package eval
