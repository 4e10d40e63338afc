// Package bench is `toolsrv bench`: index build and rank latency over
// synthetic catalogs of several sizes made from the tools of labelled
// corpora (Run, Config), live updates of .meta files, and the report
// (Report.Markdown, Report.Checks) that bench/RESULTS.md keeps.
//
// Its subpackages: tune, the threshold sweep of `toolsrv tune`; plot, the
// PNG pictures of a sweep (gonum/plot, kept out of the toolsrv binary).
// Corpora and ranking metrics are package eval's. bench/cmd holds small
// commands for people (the pictures in bench/, the built-in table's cosine
// of two texts) and bench/scripts the scripts RESULTS.md runs.
package bench
