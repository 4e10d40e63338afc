package jsonscan

import (
	"encoding/json"
	"unicode/utf8"
)

// Object returns the members of the JSON object data holds, each value a
// subslice of data with its surrounding space trimmed: what encoding/json
// decodes into map[string]json.RawMessage, without copying every value. ok
// is false when data is not one valid JSON document holding an object, and
// when a key repeats (encoding/json keeps the last value in a map but merges
// repeated objects into a struct's map field: the caller decides). It also
// says, as Check does in the same pass, whether every object in the
// document, at any depth, has distinct keys written plainly.
func Object(data []byte) (members map[string]json.RawMessage, ok, distinctKeys bool) {
	valid, distinct := Check(data)
	if !valid {
		return nil, false, false
	}
	members, ok = membersOf(data)
	return members, ok, distinct
}

// EachMember calls f with each member of the object data holds, in order:
// its key as written (the literal, quotes included) and its value, both
// subslices of data; it stops when f returns false. data must be valid JSON
// (a value Object returned, or checked with Valid); ok is false when
// it holds no object or f stopped.
func EachMember(data []byte, f func(rawKey, value []byte) bool) (ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		end, _ := StringEnd(data, i)
		rawKey := data[i:end:end]
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		vend := valueEnd(data, i)
		if !f(rawKey, data[i:vend:vend]) {
			return false
		}
		i = skipSpace(data, vend)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

func membersOf(data []byte) (members map[string]json.RawMessage, ok bool) {
	members = make(map[string]json.RawMessage, 16)
	ok = EachMember(data, func(rawKey, value []byte) bool {
		key, plain := String(rawKey)
		if !plain { // escapes, or bytes encoding/json may replace
			if err := json.Unmarshal(rawKey, &key); err != nil {
				return false
			}
		}
		if _, dup := members[key]; dup {
			return false
		}
		members[key] = json.RawMessage(value)
		return true
	})
	if !ok {
		return nil, false
	}
	return members, true
}

// valueEnd returns the end of the JSON value starting at data[i], which
// must be valid JSON.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		end, _ := StringEnd(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := StringEnd(data, j)
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// String returns the text of a JSON string literal (raw, with nothing
// around it) whose text is valid UTF-8 and whose escapes are the one-letter
// ones (\n, \", …; not \u).
func String(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	simple := true
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			simple = false
			break
		}
	}
	if simple {
		return string(body), true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c < 0x20 || c == '"':
			return "", false
		case c != '\\':
			out = append(out, c)
			continue
		}
		i++
		if i == len(body) {
			return "", false
		}
		switch body[i] {
		case '"', '\\', '/':
			out = append(out, body[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		default: // \u and anything invalid
			return "", false
		}
	}
	if !utf8.Valid(out) { // encoding/json replaces invalid bytes
		return "", false
	}
	return string(out), true
}

// Strings returns the texts of a JSON array (raw, with nothing around
// it) of strings String reads.
func Strings(raw []byte) ([]string, bool) {
	if len(raw) < 2 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, false
	}
	out := []string{}
	i := skipSpace(raw, 1)
	for i < len(raw)-1 {
		if raw[i] != '"' {
			return nil, false
		}
		end, _ := StringEnd(raw, i)
		if end > len(raw)-1 {
			return nil, false
		}
		s, ok := String(raw[i:end])
		if !ok {
			return nil, false
		}
		out = append(out, s)
		i = skipSpace(raw, end)
		switch {
		case i < len(raw)-1 && raw[i] == ',':
			i = skipSpace(raw, i+1)
			if i >= len(raw)-1 { // a trailing comma
				return nil, false
			}
		case i != len(raw)-1:
			return nil, false
		}
	}
	return out, true
}

// StringEnd returns the index just past the string starting at data[i] (a
// '"'), and whether it holds escapes. data need not be valid JSON: an
// unterminated string ends at len(data).
func StringEnd(data []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(data), escaped
}
