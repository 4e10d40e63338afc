// Package registry turns directories of .meta files into a live catalog of
// tools.
//
// A tool named N is the file N.meta (a JSON object) in one of the tool
// directories (OLLIE_TOOLS_PATH, colon separated, earlier directories win).
// The registry parses every field, compiles the argument schema, evaluates
// host-conditional variants against a Host, resolves the command to run, and
// publishes an immutable Catalog. A broken file makes only that one tool
// invalid: it is left out and listed among the catalog's Problems.
//
// Watch keeps the catalog live: every change of a .meta file or of a
// co-located executable produces a new Catalog with a higher Revision, which is
// sent to subscribers (the index and the 9P server).
//
// Decisions where the spec is silent:
//   - Files whose names start with "." or end in "~", ".swp", ".tmp" are editor
//     droppings and are ignored. Subdirectories are not scanned.
//   - A tool that is invalid in an earlier directory does not shadow a valid
//     one of the same name in a later directory: the valid one is served and
//     both the problem and the shadowing are reported.
//   - "timeout" (seconds as a number, or a Go duration string such as "90s")
//     is accepted as a known field: the per-tool call timeout.
//   - A .meta without "args" gets {"type":"object"}.
//   - "variants" with an empty list behaves as if absent.
package registry
