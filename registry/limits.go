package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseLimits parses a .meta "limits" object:
//
//	{"processes": 64, "memory": "512MiB", "fileSize": "4GiB", "tempSize": "2GiB"}
//
// processes is a positive count; memory (per process), fileSize (the
// largest file a process may write) and tempSize (the call's temporary
// directory) are bytes (a number) or a size with a unit (see ParseSize),
// at least 1 MiB. Unknown keys are errors (a misspelt limit would
// silently not apply).
func parseLimits(raw json.RawMessage) (ToolLimits, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return ToolLimits{}, errors.New(`must be an object such as {"processes": 64, "memory": "512MiB"}`)
	}
	var l ToolLimits
	for k, v := range obj {
		switch k {
		case "processes":
			var n float64
			if err := json.Unmarshal(v, &n); err != nil || n < 1 || n != math.Trunc(n) || n > 1<<22 {
				return ToolLimits{}, errors.New(`"processes" must be a whole number of at least 1`)
			}
			l.Processes = int(n)
		case "memory", "fileSize", "tempSize":
			b, err := parseSizeValue(k, v)
			if err != nil {
				return ToolLimits{}, err
			}
			switch k {
			case "memory":
				l.Memory = b
			case "fileSize":
				l.FileSize = b
			default:
				l.TempSize = b
			}
		default:
			return ToolLimits{}, fmt.Errorf("unknown limit %q; the limits are \"processes\", \"memory\", \"fileSize\" and \"tempSize\"", k)
		}
	}
	return l, nil
}

// parseSizeValue parses the size limit named key: a number of bytes or a
// string with a unit, at least 1 MiB.
func parseSizeValue(key string, v json.RawMessage) (int64, error) {
	var n float64
	var s string
	switch {
	case json.Unmarshal(v, &n) == nil:
		if n < 1<<20 || n != math.Trunc(n) {
			return 0, fmt.Errorf(`%q must be at least 1 MiB (a number of bytes, or a size such as "512MiB")`, key)
		}
		return int64(n), nil
	case json.Unmarshal(v, &s) == nil:
		b, err := ParseSize(s)
		if err != nil {
			return 0, fmt.Errorf(`%q: %w`, key, err)
		}
		if b < 1<<20 {
			return 0, fmt.Errorf(`%q must be at least 1 MiB`, key)
		}
		return b, nil
	}
	return 0, fmt.Errorf(`%q must be a number of bytes or a size such as "512MiB"`, key)
}

// sizeUnits are the units ParseSize accepts (binary and decimal).
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
}

// ParseSize parses a size in bytes: a number with an optional unit, such as
// "1073741824", "512MiB", "2G" (binary) or "1.5GB" (decimal).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	mult, ok := sizeUnits[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || math.IsInf(v*mult, 0) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not a size; write bytes or a number with a unit, such as 512MiB, 2GiB or 1.5GB", s)
	}
	return int64(v * mult), nil
}
