package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/internal/jsonscan"
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

// keyVisitor is told where keys and array elements are: want (nil: all)
// selects by the path of the enclosing container, visit receives the
// member's or element's path (valid only during the call) and line.
type keyVisitor struct {
	want  func(parent jsonPath) bool
	visit func(path jsonPath, line int)
}

// scanKeys walks one JSON document, reports to v (if not nil) the path and
// line of object members' keys and array elements' first tokens, and
// returns the keys that repeat within their object, at any depth. Keys are
// compared after unescaping, so "n" and "\u006e" are the same key.
//
// data must be valid JSON (callers decode it first): scanKeys only tokenizes
// it, byte by byte, which is several times faster than json.Decoder.Token
// and allocates little.
//
// encoding/json (and the JSON Schema library) keep the last of repeated
// keys while other readers keep the first: a document with a repeated key
// means different things to different programs, so callers refuse it.
func scanKeys(data []byte, v *keyVisitor) ([]duplicateKey, error) {
	type frame struct {
		obj   bool
		key   []byte         // object: the (unescaped) key of the value being read
		next  int            // array: index of the next element
		first int            // object: where its keys start in keys
		big   map[string]int // object: key → line, once it has many keys
	}
	type keyRef struct {
		key  []byte
		line int
	}
	const linearKeys = 16 // up to this many keys, repeats are found by a scan
	stack := make([]frame, 0, 8)
	keys := make([]keyRef, 0, 32) // the keys of every open object, innermost last
	path := make(jsonPath, 0, 8)  // path of the innermost open container
	var dups []duplicateKey
	line, wantKey := 1, false
	wanted := func() bool { return v != nil && (v.want == nil || v.want(path)) }
	element := func() {
		if n := len(stack); n > 0 && !stack[n-1].obj && wanted() {
			v.visit(append(path, pathSeg{Index: stack[n-1].next}), line)
		}
	}
	valueDone := func() {
		if n := len(stack); n > 0 && !stack[n-1].obj {
			stack[n-1].next++
		}
	}
	for i := 0; i < len(data); {
		switch c := data[i]; c {
		case '\n':
			line++
			i++
		case ' ', '\t', '\r', ':':
			i++
		case ',':
			wantKey = len(stack) > 0 && stack[len(stack)-1].obj
			i++
		case '{', '[':
			element()
			if len(stack) >= maxJSONDepth {
				return dups, fmt.Errorf("nested more than %d levels deep", maxJSONDepth)
			}
			if n := len(stack); n > 0 {
				if f := stack[n-1]; f.obj {
					path = append(path, pathSeg{Key: string(f.key), Index: -1})
				} else {
					path = append(path, pathSeg{Index: f.next})
				}
			}
			stack = append(stack, frame{obj: c == '{', first: len(keys)})
			wantKey = c == '{'
			i++
		case '}', ']':
			if n := len(stack); n > 0 {
				keys = keys[:stack[n-1].first]
				stack = stack[:n-1]
			}
			if len(stack) > 0 && len(path) > 0 {
				path = path[:len(path)-1]
			}
			valueDone()
			wantKey = false
			i++
		case '"':
			end, escaped := jsonscan.StringEnd(data, i)
			if !wantKey || len(stack) == 0 {
				element()
				valueDone()
				i = end
				continue
			}
			k := data[i+1 : max(end-1, i+1)]
			if escaped {
				var s string
				_ = json.Unmarshal(data[i:end], &s)
				k = []byte(s)
			}
			f := &stack[len(stack)-1]
			f.key, wantKey = k, false
			first := 0
			if f.big != nil {
				first = f.big[string(k)]
			} else {
				for _, o := range keys[f.first:] {
					if bytes.Equal(o.key, k) {
						first = o.line
						break
					}
				}
			}
			if first > 0 {
				member := append(path, pathSeg{Key: string(k), Index: -1})
				dups = append(dups, duplicateKey{Path: append(jsonPath(nil), member...), Line: line, FirstLine: first})
			} else {
				keys = append(keys, keyRef{key: k, line: line})
				if f.big != nil {
					f.big[string(k)] = line
				} else if len(keys)-f.first > linearKeys {
					f.big = make(map[string]int, 2*linearKeys)
					for _, o := range keys[f.first:] {
						f.big[string(o.key)] = o.line
					}
				}
			}
			if wanted() {
				v.visit(append(path, pathSeg{Key: string(k), Index: -1}), line)
			}
			i = end
		default: // a number, true, false or null
			element()
			valueDone()
			for i < len(data) && !endsLiteral(data[i]) {
				i++
			}
		}
	}
	return dups, nil
}

func endsLiteral(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// fieldLines finds the line of a field's key in a document on demand: the
// scan runs the first time a line is asked for, so a valid file (whose
// lines nobody asks for) costs nothing. Safe for concurrent use.
type fieldLines struct {
	data []byte
	want func(parent jsonPath) bool // which containers' members to index
	once sync.Once
	m    map[string]int
	// path and sum, when set instead of data, name the file to read the
	// document from and what it must hash to.
	path string
	sum  [32]byte
}

func newFieldLines(data []byte, want func(parent jsonPath) bool) *fieldLines {
	return &fieldLines{data: data, want: want}
}

// fromFile makes l read its document from path when a line is first asked
// for, instead of keeping the bytes: a catalog's .meta files are not held in
// memory for the few with a problem (a sixth of the registry's memory at
// 100,000 tools). A file changed since (sum differs) gives no lines.
func (l *fieldLines) fromFile(path string, sum [32]byte) {
	if l == nil || l.m != nil {
		return
	}
	l.data, l.path, l.sum = nil, path, sum
}

// line is the 1-based line of field ("variants[0].cmd"), 0 when unknown.
func (l *fieldLines) line(field string) int {
	if l == nil {
		return 0
	}
	l.once.Do(func() {
		l.m = map[string]int{}
		data := l.data
		if data == nil && l.path != "" {
			raw, err := fileio.ReadRegular(l.path, MaxMetaSize)
			if err != nil || sha256.Sum256(raw) != l.sum {
				return // changed since: lines unknown (its next parse has its own)
			}
			data = raw
		}
		_, _ = scanKeys(data, &keyVisitor{want: l.want, visit: func(path jsonPath, line int) { l.m[path.field()] = line }})
		l.data = nil
	})
	return l.m[field]
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
