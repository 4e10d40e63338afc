package registry

import (
	"fmt"
	"strings"
	"testing"
)

// nestedRefs is n levels of {"anyOf": [{"$ref": next}, {"$ref": next}]}:
// 2^n subschemas to check for one value, in a few hundred bytes per level.
func nestedRefs(n int) string {
	var defs []string
	for i := 0; i < n; i++ {
		next := fmt.Sprintf(`{"$ref":"#/$defs/d%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"d%d":{"anyOf":[%s,%s]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"integer"}`, n))
	return fmt.Sprintf(`{"$defs":{%s},"type":"object","properties":{"n":{"$ref":"#/$defs/d0"}}}`, strings.Join(defs, ","))
}

func TestSchemaCost(t *testing.T) {
	for _, c := range []struct {
		name   string
		schema string
		ok     bool
	}{
		{"plain object", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"integer"}}}}`, true},
		{"recursive tree", `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`, true},
		{"10 levels of shared refs", nestedRefs(10), true},
		{"20 levels of shared refs", nestedRefs(20), false},
		{"40 levels of shared refs", nestedRefs(40), false},
	} {
		_, err := compileSchema([]byte(c.schema))
		if c.ok && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "too costly to validate")) {
			t.Errorf("%s: %v, want refused as too costly", c.name, err)
		}
	}
}
