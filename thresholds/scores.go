package thresholds

import "fmt"

// ScoresWarning says, when the thresholds were tuned on other scores than
// the rankings they will cut, that their levels do not mean the same:
// learned is the ID of the learned last step the rankings use ("" for the
// fixed fusion). "" when they match or the file is not known (defaults
// from Fallback).
func (s Source) ScoresWarning(learned string) string {
	if s.File == nil || s.File.Scores == learned {
		return ""
	}
	switch {
	case s.File.Scores == "":
		return fmt.Sprintf("the thresholds were tuned on fixed-fusion scores, and rankings use the learned last step %s: run `toolsrv tune` (or rank with --no-learned)", learned)
	case learned == "":
		return fmt.Sprintf("the thresholds were tuned on the learned last step %s, and rankings use the fixed fusion: run `toolsrv tune --no-learned`, or rank without --no-learned", s.File.Scores)
	}
	return fmt.Sprintf("the thresholds were tuned on the learned last step %s, not %s: run `toolsrv tune`", s.File.Scores, learned)
}
