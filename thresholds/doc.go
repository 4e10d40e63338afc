// Package thresholds decides which ranked tools are offered to a model: the
// inclusion policy applied after ranking, and the versioned file its
// cut-offs are stored in.
//
// A ranked tool is offered when its calibrated score (index.Hit.Score, in
// [0,1]) clears all of:
//
//   - Min (ColdMin for tools of tier "cold", which is at least Min),
//   - Relative × the best score of the ranking (a cut relative to the best
//     match, so a clear winner does not drag weak companions along),
//
// and at most MaxTools ranked tools are offered, best first.
//
// Two rules look at the tool rather than at its score alone, and neither
// leaves a tool out while offering a worse one of its kind in its place:
//
//   - the best tool of the ranking is offered whatever ColdMin; a cold tool
//     after it below ColdMin ends the set (nothing scoring below it is
//     offered);
//   - a tool whose only evidence is the embedding (no word of the message
//     in its name, description, keywords or examples, not named, nothing
//     from the usage history) is never offered after another tool: a set
//     is not padded with tools that share no evidence with the message. A
//     weak best tool alone is offered alone (or, below MinAnswerable, "no
//     tool fits" is said); with Evidence set, such a tool needs an
//     embedding score (Candidate.Dense) of at least Evidence to be offered
//     at all, even as the best: a message that shares no word with any
//     tool and resembles none gets "no tool fits". Either rule makes way
//     only for a tool with evidence the left-out one lacks.
//
// Admit finds the levels under which a left-out tool would be offered
// (the "threshold" suggestion of --explain); a tool that only the noise
// rule leaves out has none.
//
// Version 2 adds levels for rankings made with the learned last step
// (package learn; index.Ranking.Answerable set), whose scores are
// probabilities (answerability × the tool's share of the candidates):
//
//   - MinAnswerable: "no tool fits" when the ranking's answerability is
//     below it;
//   - Mass: the best tools are offered until their scores cover Mass × the
//     answerability (one tool when one clearly wins, more when the ranking
//     is flat), still at most MaxTools;
//   - Evidence (above).
//
// With learned scores, Min is the probability a tool needs of being the one
// the message needs; it stops the offered set where the ranking's evidence
// runs out. The answerability is calibrated to the catalog by the index
// (learn.Calib: off-topic probe requests ranked against the catalog), so
// one MinAnswerable means the same in a catalog of three tools and in one
// of thousands.
//
// Rankings without an answerability (another embedder, degraded, or
// --no-learned) ignore MinAnswerable and Mass. A version 2 file records the learned model it
// was tuned on (File.Scores); version 1 files still load. The hot tools of
// the agent's profile (hot-tier tools it names in autoLoad or allowTools) are
// always offered, after the ranked ones and on top of MaxTools; without a
// profile none is. When no ranked tool clears, the selection says so
// (Selection.NoToolFits) and offers no ranked tool at all: it never falls back
// to the k least-bad matches.
//
// When the ranking is degraded (the embedder failed and scores are lexical
// only) or was asked for in BM25 mode, the Degraded levels apply if the file
// has them.
//
// Policy.Offer is the one call for every consumer (the prompt assembler's Go
// API, `toolsrv rank` outside batch mode, the 9P rank files): it ranks with
// the index (restricted to what the agent's profile allows), adds the hot
// tools and applies the policy. Policy.Select is the same on a plain list of
// scored candidates.
//
// Cut-offs are calibrated per embedder by `toolsrv tune` and stored as JSON
// in a File (format "toolsrv-thresholds", Version 2) named after the
// embedder: os.UserConfigDir()/toolsrv/thresholds/<key>.json, where key is the
// embedder ID with characters outside [A-Za-z0-9._-] replaced by '_'. Load
// looks, in order, at an explicit path (the --thresholds flag), at
// $TOOLSRV_THRESHOLDS, at that per-embedder file, then at the defaults shipped
// in the binary for the built-in embedder, and last at a conservative
// fallback (said so in Source.Warning, so callers can warn). The built-in
// embedder's ID carries a digest of its model ("builtin/v1-45b4a279"): shipped
// defaults tuned for another model of the same family still load, with a
// warning to re-tune. Thresholds hold for the embedder, the model and the
// index's lexical weight they were tuned with (recorded in File.Tuning).
// `toolsrv tune --show --json` prints the File in effect with where it was
// found (File.Source, Path, Warning), which Parse ignores: saved as it is,
// that output is a file to edit by hand (every field: docs/ranking.md, "The
// thresholds file").
package thresholds
