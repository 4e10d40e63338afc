// Package layout holds no code: its test keeps the repository's shape.
//
// The top-level directories ("rooms": embed, index, learn, eval, train,
// cmd, ...) form layers: a package imports only packages of its own room
// or of rooms below it, never one above, so the runtime reads bottom-up and
// the offline code (train/: the trainers, their commands and data) sits on
// top of what it trains, where nothing of the runtime can reach it.
// TestLayers lists every import that runs back up (an edge of a cycle
// between rooms) and prints the layers, bottom first:
//
//	go test -v -run TestLayers ./internal/layout
//
// Only the imports of non-test files count: a test may import what it
// needs to check its package. third_party (a module of its own) and
// directories without Go packages (examples, testdata) are not rooms.
//
// TestClonesCanFollow checks what a clone of the repository could not
// follow: no non-test file of a runtime package (the shipped binaries,
// cmd/toolsrv and cmd/toolsrv-sandbox, and everything they import) names the
// directory of evaluation corpora and training data that sat beside the
// repository where it was developed, and no Go or Markdown file cites a
// section of a specification that the repository does not carry.
package layout
