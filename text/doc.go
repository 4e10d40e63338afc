// Package text is toolsrv's one text analyser: how a tool document or a
// message becomes the terms that the lexical index (package index) and the
// built-in embedder's table (package embed/builtin, trained by train/embedding)
// are keyed by.
//
// An [Analyzer] cuts text into words ([Split]), lowercases each word, drops
// the words it is told to drop (too short, pure numbers, a [Stopwords] list,
// before or after stemming), and stems the rest ([Porter], [Plural]). With
// Classes, numbers and symbols become class terms that say what they are
// (classes.go): "17" and "seven" are [ClassNumber], "15%" [ClassPercent],
// "*", "^" and "times" between numbers [ClassOperator], "10 MB"
// [ClassSize], "7:30" [ClassTime], "2024-06-01" [ClassDate], "3f9a2c1"
// [ClassHex], and so on; a learned vector and weight can hold what such a
// class means, where no digit string could. With Phrases, runs of stop
// words also become phrase terms ("where is"), so that a keyword made only
// of stop words can match (phrases.go). The modes in use are fixed by the
// constructors:
//
//   - [Index], [IndexDocument] and [IndexKeywords]: the lexical index
//     (BM25F), for a message, a tool's document and its keywords.
//     Camel-case split, every word kept, plural endings folded ([Plural]),
//     then a short list of function words ([IndexStopwords]) dropped; class
//     terms, each followed by the digits it stands for; a message's runs of
//     2–4 stop words as phrases ([IndexDocument]: a document's only when
//     they make a whole part of its text; [IndexKeywords]: also the first
//     words of the run a keyword starts with, "where is" of "where is the
//     file"). A message's class terms, digits, unit abbreviations and
//     phrases ([Optional]) count only where the catalog has them, and the
//     index lets them only break ties between tools that match a real word.
//   - [Table]: the built-in embedder's table. Camel-case split also after a
//     digit ("v2Data"); class terms (without their digits); one-rune words,
//     other numbers and a longer list of function words and request filler
//     ([TableStopwords]) dropped, then the Porter stemmer.
//   - [Reference]: the reference BM25 (the plain baseline the evaluation
//     corpora were published with) that train/embedding's evaluation
//     harness reproduces: the text lowercased, runs of a–z and 0–9,
//     nothing dropped or stemmed.
//
// The shipped table (embed/builtin/model.bin) is keyed by the Table terms,
// so Table's behaviour is frozen: changing it means retraining the table.
//
// The package has no mutable state: the stop lists and the word lists of
// the classes are read-only sets built once, and a [Cache] of analysed
// words is the caller's, passed per call.
package text
