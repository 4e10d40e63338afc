package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/internal/jsonscan"
)

// The parsers of the definition fields' values (metaFields). Each gets a
// value that is present and not null; its error says what to write instead.

func parseString(raw json.RawMessage) (string, error) {
	if s, ok := jsonscan.String(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a string, not %s", jsonKind(raw))
	}
	return s, nil
}

func parseBool(raw json.RawMessage) (bool, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("must be true or false, not %s", jsonKind(raw))
	}
	return b, nil
}

func parseKeywords(raw json.RawMessage) ([]string, error) {
	if ks, ok := jsonscan.Strings(raw); ok {
		return ks, nil
	}
	var ks []string
	if err := json.Unmarshal(raw, &ks); err != nil {
		return nil, errors.New("must be an array of strings")
	}
	if ks == nil {
		ks = []string{}
	}
	return ks, nil
}

// maxExamples and maxExample bound a tool's example requests.
const (
	maxExamples = 64
	maxExample  = 500
)

// parseExamples parses "examples": requests the tool serves, in a user's
// words (each non-empty, at most maxExample bytes; at most maxExamples).
func parseExamples(raw json.RawMessage) ([]string, error) {
	var es []string
	if err := json.Unmarshal(raw, &es); err != nil {
		return nil, errors.New(`must be an array of strings: requests the tool serves, in a user's words, such as ["what changed in my repo?"]`)
	}
	if len(es) > maxExamples {
		return nil, fmt.Errorf("has %d requests; give at most %d", len(es), maxExamples)
	}
	for i, e := range es {
		switch {
		case strings.TrimSpace(e) == "":
			return nil, fmt.Errorf("request %d is empty", i+1)
		case len(e) > maxExample:
			return nil, fmt.Errorf("request %d is %d bytes long; keep each under %d", i+1, len(e), maxExample)
		}
	}
	return es, nil
}

func parseArgs(raw json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (t[0] != '{' && t[0] != 't' && t[0] != 'f') {
		return nil, errors.New("must be a JSON Schema object (or true/false)")
	}
	return append(json.RawMessage(nil), t...), nil
}

func parseTier(raw json.RawMessage) (Tier, error) {
	s, err := parseString(raw)
	if err != nil {
		return "", err
	}
	switch t := Tier(s); t {
	case Hot, Warm, Cold:
		return t, nil
	}
	return "", fmt.Errorf("is %q; use \"hot\", \"warm\" or \"cold\"", s)
}

func parseCmd(raw json.RawMessage) (string, error) {
	s, err := parseString(raw)
	switch {
	case err != nil:
		return "", err
	case strings.TrimSpace(s) == "":
		return "", errors.New("is empty; remove it or give a command")
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	}
	return s, nil
}

func parseConcurrency(raw json.RawMessage) (Concurrency, error) {
	s, err := parseString(raw)
	if err != nil {
		return "", err
	}
	switch c := Concurrency(s); c {
	case Parallel, Serial, Exclusive:
		return c, nil
	}
	return "", fmt.Errorf("is %q; use \"parallel\", \"serial\" or \"exclusive\"", s)
}

// parseTimeout takes seconds (a number) or a Go duration string ("90s").
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	var d time.Duration
	var secs float64
	var s string
	switch {
	case json.Unmarshal(raw, &secs) == nil:
		d = time.Duration(secs * float64(time.Second))
	case json.Unmarshal(raw, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration; write seconds (30) or a duration (\"90s\", \"2m\")", s)
		}
	default:
		return 0, errors.New("must be seconds (a number) or a duration string such as \"90s\"")
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}
