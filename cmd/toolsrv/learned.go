package main

import (
	"github.com/toolsrv/toolsrv/learn"
)

// learnedID is the ID of the learned last step rankings of embedder
// embedderID use ("" when none applies or it is turned off).
func learnedID(embedderID string, off bool) string {
	if off {
		return ""
	}
	m, err := learn.Default()
	if err != nil || !m.Applies(embedderID) {
		return ""
	}
	return m.ID
}
