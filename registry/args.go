package registry

import (
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validateArgs checks a call's JSON arguments: one JSON object, no key given
// twice at any depth (readers disagree on which of two values counts, so the
// schema could check one and the tool use the other), and valid against the
// tool's schema.
func validateArgs(t *Tool, args []byte) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, ok := inst.(map[string]any); !ok {
		return fmt.Errorf("arguments must be a JSON object")
	}
	if err := refuseDuplicateKeys("arguments", args); err != nil {
		return err
	}
	s, err := t.Schema()
	if err != nil {
		return fmt.Errorf("%s cannot check its arguments: %w", t.Name, err)
	}
	if s == nil {
		return nil
	}
	if err := s.Validate(inst); err != nil {
		msg := strings.Replace(err.Error(), "jsonschema validation failed with 'tool:///args.json#'", "", 1)
		return fmt.Errorf("arguments do not match the schema of %s:%s", t.Name, msg)
	}
	return nil
}
