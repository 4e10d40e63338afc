// Package laststep fits toolsrv's learned last step (package learn) on
// request → tool pairs (train/data: tldr pages, CLINC150, HWU64, Home
// Assistant intents, cheat sheets), with features computed by the real index
// over catalogs built from those pairs, and measures it on held-out tools and
// on labelled corpora (package eval's layout). Command train/cmd/learn runs
// it; learn/MODEL.md tells how the shipped model was made.
package laststep
