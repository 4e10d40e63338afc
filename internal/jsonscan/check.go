package jsonscan

import "unicode/utf8"

// maxDepth is encoding/json's nesting limit: a document nested deeper is
// not valid to it.
const maxDepth = 10000

// linearKeys is how many keys of one object are compared one by one
// before Check indexes them in a map.
const linearKeys = 24

// Check says whether data is one valid JSON document, exactly as
// json.Valid does, in one pass about twice as fast, and whether
// every object in it has distinct keys written plainly. distinctKeys is
// false when a key repeats in an object, and also when a key holds an
// escape or invalid UTF-8 (Check does not decode keys): the caller then
// looks closer.
func Check(data []byte) (valid, distinctKeys bool) {
	return check(data, true)
}

// Valid is json.Valid, about twice as fast (Check without the keys).
func Valid(data []byte) bool {
	valid, _ := check(data, false)
	return valid
}

// frame is an open object or array.
type frame struct {
	obj   bool
	first int                 // object: where its keys start in keys
	big   map[string]struct{} // object: its keys, once it has many
}

// states of check.
const (
	wantValue = iota // a value starts at i
	wantKey          // an object key starts at i
	afterValue
)

// check is Check; with keys false it does not look at keys. Its state is
// in local slices whose first frames and keys live on the stack: a usual
// document allocates nothing.
func check(data []byte, keys bool) (valid, distinct bool) {
	var stackArr [16]frame
	var keysArr [48][]byte
	stack, seen := stackArr[:0], keysArr[:0] // seen: the keys of every open object, innermost last
	distinct = keys
	pop := func() {
		if f := stack[len(stack)-1]; f.obj {
			seen = seen[:f.first]
		}
		stack = stack[:len(stack)-1]
	}
	i, state := skipSpace(data, 0), wantValue
	for {
		switch state {
		case wantValue:
			if i >= len(data) {
				return false, false
			}
			switch b := data[i]; {
			case b == '{' || b == '[':
				if len(stack) == maxDepth {
					return false, false
				}
				stack = append(stack, frame{obj: b == '{', first: len(seen)})
				i = skipSpace(data, i+1)
				switch {
				case i < len(data) && data[i] == ']' && b == '[', i < len(data) && data[i] == '}' && b == '{':
					pop()
					i, state = i+1, afterValue
				case b == '{':
					state = wantKey
				}
				continue
			case b == '"':
				end, _, ok := stringEnd(data, i)
				if !ok {
					return false, false
				}
				i = end
			case b == '-' || b >= '0' && b <= '9':
				end, ok := numberEnd(data, i)
				if !ok {
					return false, false
				}
				i = end
			case b == 't':
				if !literal(data, i, "true") {
					return false, false
				}
				i += 4
			case b == 'f':
				if !literal(data, i, "false") {
					return false, false
				}
				i += 5
			case b == 'n':
				if !literal(data, i, "null") {
					return false, false
				}
				i += 4
			default:
				return false, false
			}
			state = afterValue
		case wantKey:
			if i >= len(data) || data[i] != '"' {
				return false, false
			}
			end, escaped, ok := stringEnd(data, i)
			if !ok {
				return false, false
			}
			if distinct {
				k := data[i+1 : end-1]
				// encoding/json reads each invalid UTF-8 byte as U+FFFD:
				// such keys are compared as it reads them, by the caller.
				if escaped || !utf8.Valid(k) {
					distinct = false
				} else {
					seen, distinct = addKey(&stack[len(stack)-1], seen, k)
				}
			}
			i = skipSpace(data, end)
			if i >= len(data) || data[i] != ':' {
				return false, false
			}
			i, state = skipSpace(data, i+1), wantValue
		case afterValue:
			i = skipSpace(data, i)
			n := len(stack)
			if n == 0 {
				return i == len(data), distinct
			}
			if i >= len(data) {
				return false, false
			}
			top := &stack[n-1]
			switch data[i] {
			case ',':
				i = skipSpace(data, i+1)
				state = wantValue
				if top.obj {
					state = wantKey
				}
			case '}', ']':
				if (data[i] == '}') != top.obj {
					return false, false
				}
				pop()
				i++
			default:
				return false, false
			}
		}
	}
}

// addKey records k, a key of the object f (whose keys, unless it has many,
// are seen[f.first:]), and says whether it is new to it.
func addKey(f *frame, seen [][]byte, k []byte) ([][]byte, bool) {
	if f.big != nil {
		if _, dup := f.big[string(k)]; dup {
			return seen, false
		}
		f.big[string(k)] = struct{}{}
		return seen, true
	}
	for _, o := range seen[f.first:] {
		if string(o) == string(k) {
			return seen, false
		}
	}
	seen = append(seen, k)
	if len(seen)-f.first > linearKeys {
		f.big = make(map[string]struct{}, 2*linearKeys)
		for _, o := range seen[f.first:] {
			f.big[string(o)] = struct{}{}
		}
		seen = seen[:f.first]
	}
	return seen, true
}

// stringEnd checks the string starting at data[i] (a '"') and returns the
// index just past it and whether it holds escapes.
func stringEnd(data []byte, i int) (end int, escaped, ok bool) {
	for j := i + 1; j < len(data); j++ {
		switch b := data[j]; {
		case b == '"':
			return j + 1, escaped, true
		case b < 0x20:
			return 0, false, false
		case b == '\\':
			escaped = true
			j++
			if j >= len(data) {
				return 0, false, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(data) {
					return 0, false, false
				}
				for _, h := range data[j+1 : j+5] {
					if !isHex(h) {
						return 0, false, false
					}
				}
				j += 4
			default:
				return 0, false, false
			}
		}
	}
	return 0, false, false
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// numberEnd checks the number starting at data[i] and returns the index
// just past it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(data []byte, i int) (int, bool) {
	digits := func(j int) int {
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		return j
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return 0, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = digits(i + 1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// literal says whether data holds word at i.
func literal(data []byte, i int, word string) bool {
	return len(data)-i >= len(word) && string(data[i:i+len(word)]) == word
}
