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
//   - Files are read with fileio.ReadRegular: a .meta (or agent profile)
//     that is, or is swapped for, a named pipe or a device is a problem of
//     that file ("not a regular file"), never a stall.
//   - Every problem of a file is reported (FieldErrors), each with its field
//     and line, at most 20 per file; Catalog.Problems has one entry per
//     problem.
//   - A key given twice, at any depth, makes a .meta invalid, a profile
//     invalid and call arguments refused (Tool.ValidateArgs): JSON readers
//     disagree on which of the two values counts.
//   - An unknown field that is a near miss (another case, '_' or '-', one
//     or two edits, or a synonym such as "parameters") of a guarded field
//     is an error: ignoring it would silently change what runs or how it
//     is confined. The guarded fields are those declared so in metaFields,
//     variants and a variant's match (the README lists them). A near miss
//     of another field is a warning naming it.
//   - Argument schemas are bounded (MaxSchemaSize, MaxSchemaDepth) and
//     compiled off the registry's lock, each with Options.CompileTimeout; a
//     tool whose compile is still running keeps its previous state, and
//     Load waits only for the compiles it started.
//   - A restart takes an unchanged file's parse from the catalog snapshot
//     (Options.CatalogCache, snapshot.go) after one stat: size,
//     modification and change time, inode and device must all match. A
//     file changed within 2 s of the load that read it, or with a
//     problem, is read every time.
//   - Agent profiles have only "autoLoad" and "allowTools"; anything else,
//     a null allowTools or a name that cannot be a tool is an error.
//
// Where to change what, for a new .meta field: one entry in metaFields
// (field.go), in the order show prints it: its name, its parser (a
// parseX in fieldparse.go), the Tool member it lands on and its default,
// .guarded(why) if a misspelling of it must be an error, and how show
// prints it (.shown or .shownBelow). Add that member to Tool (tool.go),
// its JSON name the field's. Parsing, the variant overlay, the Tool build,
// the near-miss check, the catalog snapshot's codec (from the value's
// type) and show all follow from the entry. The tests then ask for a
// sample value in fieldSamples (field_test.go: TestSnapshotFields checks
// that it survives the snapshot) and showSamples
// (cmd/toolsrv/show_test.go), and for the field in README's Fields (and in
// its list of guarded fields, if guarded).
package registry
