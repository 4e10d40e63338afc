package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxReported is the most problems listed for one file or document; the
// rest are counted.
const maxReported = 20

// maxJSONDepth is the deepest nesting scanKeys follows (encoding/json's own
// limit for Unmarshal).
const maxJSONDepth = 10000

// pathSeg is one step of a path into a JSON document: an object member
// (Index < 0) or an array element.
type pathSeg struct {
	Key   string
	Index int
}

// jsonPath locates a value in a JSON document.
type jsonPath []pathSeg

// pointer is the RFC 6901 JSON pointer ("" for the document, "/a/0/b~1c").
func (p jsonPath) pointer() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		if s.Index >= 0 {
			b.WriteString(strconv.Itoa(s.Index))
			continue
		}
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.Key))
	}
	return b.String()
}

// field is the path as .meta problems name fields: "variants[0].match.os".
func (p jsonPath) field() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.Index >= 0:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case i > 0:
			b.WriteByte('.')
			fallthrough
		default:
			b.WriteString(s.Key)
		}
	}
	return b.String()
}

// duplicateKey is an object member whose key an earlier member of the same
// object already used.
type duplicateKey struct {
	Path      jsonPath // the member's path, ending with the repeated key
	Line      int      // line of the (first) repetition
	FirstLine int      // line of the first use
	Times     int      // how often the key is given (after collapseDuplicates)
}

func (d duplicateKey) message() string {
	if d.Times > 2 {
		return fmt.Sprintf("is given %d times (first on line %d)", d.Times, d.FirstLine)
	}
	return fmt.Sprintf("is given twice (first on line %d)", d.FirstLine)
}

// collapseDuplicates reports each repeated key once, with how often it is
// given, in the order of first repetition.
func collapseDuplicates(dups []duplicateKey) []duplicateKey {
	var out []duplicateKey
	at := map[string]int{}
	for _, d := range dups {
		ptr := d.Path.pointer()
		if i, ok := at[ptr]; ok {
			out[i].Times++
			continue
		}
		at[ptr] = len(out)
		d.Times = 2
		out = append(out, d)
	}
	return out
}

// scanKeys walks one JSON document, calls visit (if not nil) with the path
// and line of every object member's key and of every array element's first
// token, and returns the keys that repeat
// within their object, at any depth. Keys are compared after unescaping, so
// "n" and "\u006e" are the same key. visit must copy path to keep it.
//
// encoding/json (and the JSON Schema library) keep the last of repeated
// keys while other readers keep the first: a document with a repeated key
// means different things to different programs, so callers refuse it.
func scanKeys(data []byte, visit func(path jsonPath, line int)) ([]duplicateKey, error) {
	type frame struct {
		obj     bool
		wantKey bool           // object: the next token is a key or '}'
		key     string         // object: the key of the value being read
		next    int            // array: index of the next element
		seen    map[string]int // object: key → line of its first use
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := lineCounter{data: data}
	var stack []frame
	var path jsonPath // path of the innermost open container
	var dups []duplicateKey
	valueDone := func() {
		if n := len(stack); n > 0 {
			if f := &stack[n-1]; f.obj {
				f.wantKey = true
			} else {
				f.next++
			}
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return dups, nil
		}
		if err != nil {
			return dups, err
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				f := &stack[n-1]
				f.key, f.wantKey = k, false
				line := lines.at(dec.InputOffset())
				member := append(path, pathSeg{Key: k, Index: -1})
				if first, seen := f.seen[k]; seen {
					dups = append(dups, duplicateKey{Path: append(jsonPath(nil), member...), Line: line, FirstLine: first})
				} else {
					if f.seen == nil {
						f.seen = map[string]int{}
					}
					f.seen[k] = line
				}
				if visit != nil {
					visit(member, line)
				}
				continue
			}
		}
		d, isDelim := tok.(json.Delim)
		if n := len(stack); visit != nil && n > 0 && !stack[n-1].obj && !(isDelim && (d == '}' || d == ']')) {
			visit(append(path, pathSeg{Index: stack[n-1].next}), lines.at(dec.InputOffset()))
		}
		switch {
		case isDelim && (d == '{' || d == '['):
			if len(stack) >= maxJSONDepth {
				return dups, fmt.Errorf("nested more than %d levels deep", maxJSONDepth)
			}
			if n := len(stack); n > 0 {
				f := stack[n-1]
				if f.obj {
					path = append(path, pathSeg{Key: f.key, Index: -1})
				} else {
					path = append(path, pathSeg{Index: f.next})
				}
			}
			stack = append(stack, frame{obj: d == '{', wantKey: d == '{'})
		case isDelim:
			stack = stack[:len(stack)-1]
			if len(stack) > 0 {
				path = path[:len(path)-1]
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// lineCounter turns increasing byte offsets into 1-based line numbers
// without rescanning the data from the start each time.
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func (c *lineCounter) at(off int64) int {
	if c.line == 0 {
		c.line = 1
	}
	off = min(max(off, 0), int64(len(c.data)))
	if off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}

// refuseDuplicateKeys is the error for the first repeated key of a JSON
// document, naming it and its JSON pointer; nil when no key repeats.
func refuseDuplicateKeys(what string, data []byte) error {
	dups, err := scanKeys(data, nil)
	if err != nil {
		return fmt.Errorf("%s are not valid JSON: %w", what, err)
	}
	if len(dups) == 0 {
		return nil
	}
	var msgs []string
	for _, d := range collapseDuplicates(dups) {
		if len(msgs) == maxReported {
			msgs = append(msgs, "…")
			break
		}
		times := "twice"
		if d.Times > 2 {
			times = fmt.Sprintf("%d times", d.Times)
		}
		msgs = append(msgs, fmt.Sprintf("key %q is given %s at %s", d.Path[len(d.Path)-1].Key, times, d.Path.pointer()))
	}
	return errors.New(what + ": " + strings.Join(msgs, "; ") + "; send each key once")
}
