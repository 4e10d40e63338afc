package registry

import "github.com/santhosh-tekuri/jsonschema/v6"

// MaxSchemaCost bounds schemaCost: the number of subschemas one value of
// the arguments may be checked against. A small schema can be exponentially
// costly: 20 levels of {"anyOf": [{"$ref": next}, {"$ref": next}]} (2 KB)
// took over a second and 60 MB to validate one value, 30 levels would take
// minutes; real tools stay far below (the shared eval corpora's largest is
// in the tens).
const MaxSchemaCost = 100_000

// schemaCost is the size of s expanded as a tree: every subschema counted
// once per path that reaches it, which is what validating one value may
// visit. A $ref back to a schema already on the path (a recursive schema)
// counts once: recursion follows the value's own nesting, which the
// argument size bounds.
func schemaCost(s *jsonschema.Schema) float64 {
	memo := map[*jsonschema.Schema]float64{}
	onPath := map[*jsonschema.Schema]bool{}
	var cost func(*jsonschema.Schema) float64
	cost = func(s *jsonschema.Schema) float64 {
		if s == nil {
			return 0
		}
		if v, ok := memo[s]; ok {
			return v
		}
		if onPath[s] {
			return 1
		}
		onPath[s] = true
		c := 1.0
		for _, sub := range subschemas(s) {
			c += cost(sub)
			if c > 2*MaxSchemaCost {
				break // enough to refuse; stop expanding
			}
		}
		delete(onPath, s)
		memo[s] = c
		return c
	}
	return cost(s)
}

// subschemas are every schema s applies, to the value or to its parts.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
		s.Contains, s.Items2020, s.UnevaluatedProperties, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	for _, p := range s.DependentSchemas {
		out = append(out, p)
	}
	for _, d := range s.Dependencies {
		if p, ok := d.(*jsonschema.Schema); ok {
			out = append(out, p)
		}
	}
	for _, v := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch v := v.(type) {
		case *jsonschema.Schema:
			out = append(out, v)
		case []*jsonschema.Schema:
			out = append(out, v...)
		}
	}
	return out
}
