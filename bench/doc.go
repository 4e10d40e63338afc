// Package bench measures toolsrv: ranking quality on labelled corpora
// (FindCorpora, LoadCorpus, EvalCorpus, MacroAverage), threshold sweeps
// (Sweep, for toolsrv tune) and, in its bench files, index and query speed.
//
// A corpus is a directory C with C/tools/*.meta and C/queries.jsonl, one
// labelled request per line: {"id","query","relevant":[tool names]}; an
// empty list ("relevant": []) marks a request no tool serves, which counts
// only in the offered-set figures (EvalOffers: hit, tools offered, "no tool
// fits" recall and precision, accuracy).
// Metrics follow the usual definitions with binary relevance: Recall@k =
// |relevant ∩ top k| / |relevant|, NDCG@10 with gains 1, MRR over the whole
// ranking (reciprocal rank of the first relevant tool, 0 if none).
package bench
