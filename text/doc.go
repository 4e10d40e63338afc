// Package text is toolsrv's one text analyser: how a tool document or a
// message becomes the terms that the lexical index (package index) and the
// built-in embedder's table (package embed/builtin, trained by train/embedding)
// are keyed by.
//
// An [Analyzer] cuts text into words ([Split]), lowercases each word, drops
// the words it is told to drop (too short, pure numbers, a [Stopwords] list,
// before or after stemming), and stems the rest ([Porter], [Plural]). The
// modes in use are fixed by the constructors:
//
//   - [Index]: the lexical index (BM25F). Camel-case split, every word kept,
//     plural endings folded ([Plural]), then a short list of function words
//     ([IndexStopwords]) dropped.
//   - [Table]: the built-in embedder's table. Camel-case split also after a
//     digit ("v2Data"), one-rune words, numbers and a longer list of function
//     words and request filler ([TableStopwords]) dropped, then the Porter
//     stemmer.
//   - [Reference]: the reference BM25 (the plain baseline the evaluation
//     corpora were published with) that train/embedding's evaluation
//     harness reproduces: the text lowercased, runs of a–z and 0–9,
//     nothing dropped or stemmed.
//
// The shipped table (embed/builtin/model.bin) is keyed by the Table terms,
// so Table's behaviour is frozen: changing it means retraining the table.
//
// The package has no mutable state: the stop lists are read-only sets built
// once, and a [Cache] of analysed words is the caller's, passed per call.
package text
