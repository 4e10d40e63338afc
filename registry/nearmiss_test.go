package registry

import (
	"strings"
	"testing"
)

// TestNearMissesOfGuardedFields: "readonly": true was only a warning, and
// the tool silently stayed writable. A near miss of a field that changes
// what runs or how it is confined is an error with the suggestion; a near
// miss of another field is a warning with the suggestion; other unknown
// fields stay warnings. The same holds inside variants.
func TestNearMissesOfGuardedFields(t *testing.T) {
	tests := []struct {
		name, meta string
		errField   string // "" when the file must parse
		errMsg     string
		warning    string // substring of a warning, when errField is ""
	}{
		{"readonly", `{"description":"d","readonly":true}`, "readonly", `did you mean "readOnly"?`, ""},
		{"ReadOnly", `{"description":"d","ReadOnly":true}`, "ReadOnly", `did you mean "readOnly"?`, ""},
		{"read_only", `{"description":"d","read_only":true}`, "read_only", `did you mean "readOnly"?`, ""},
		{"readOnyl", `{"description":"d","readOnyl":true}`, "readOnyl", `did you mean "readOnly"?`, ""},
		{"netwrok", `{"description":"d","netwrok":true}`, "netwrok", `did you mean "network"?`, ""},
		{"Network", `{"description":"d","Network":false}`, "Network", `did you mean "network"?`, ""},
		{"bypas", `{"description":"d","bypas":true}`, "bypas", `did you mean "bypass"?`, ""},
		{"cmnd", `{"description":"d","cmnd":"rm -rf x"}`, "cmnd", `did you mean "cmd"?`, ""},
		{"command", `{"description":"d","command":"ls"}`, "command", `did you mean "cmd"?`, ""},
		{"arg", `{"description":"d","arg":{"type":"object"}}`, "arg", `did you mean "args"?`, ""},
		{"parameters", `{"description":"d","parameters":{"type":"object"}}`, "parameters", `did you mean "args"?`, ""},
		{"inputSchema", `{"description":"d","inputSchema":{"type":"object"}}`, "inputSchema", `did you mean "args"?`, ""},
		{"concurency", `{"description":"d","concurency":"serial"}`, "concurency", `did you mean "concurrency"?`, ""},
		{"timout", `{"description":"d","timout":5}`, "timout", `did you mean "timeout"?`, ""},
		{"varients", `{"description":"d","varients":[]}`, "varients", `did you mean "variants"?`, ""},
		{"in a variant", `{"description":"d","variants":[{"readonly":true}]}`, "variants[0].readonly", `did you mean "readOnly"?`, ""},
		{"match in a variant", `{"description":"d","variants":[{"macth":{"os":"linux"}}]}`, "variants[0].macth", `did you mean "match"?`, ""},
		{"match key", `{"description":"d","variants":[{"match":{"binay":"jq"}}]}`, "variants[0].match.binay", `did you mean "binary"?`, ""},
		{"descripton", `{"description":"d","descripton":"x"}`, "", "", `unknown field "descripton" (line 1): did you mean "description"?`},
		{"keyword", `{"description":"d","keyword":["x"]}`, "", "", `did you mean "keywords"?`},
		{"Tier", `{"description":"d","Tier":"hot"}`, "", "", `did you mean "tier"?`},
		{"prompt in a variant", `{"description":"d","variants":[{"promt":"x"}]}`, "", "", `unknown field "variants[0].promt" (line 1): did you mean "prompt"?`},
		{"unrelated", `{"description":"d","colour":"blue"}`, "", "", `unknown field "colour" is kept but not used`},
		{"unrelated short", `{"description":"d","env":"x"}`, "", "", `unknown field "env" is kept but not used`},
		{"tags is not args", `{"description":"d","tags":["x"]}`, "", "", `unknown field "tags" is kept but not used`},
		{"top-level match", `{"description":"d","match":{"os":"linux"}}`, "", "", `"match" only has an effect inside a variant`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMeta([]byte(tc.meta))
			if tc.errField != "" {
				var all FieldErrors
				if !asFieldErrors(err, &all) || len(all) != 1 {
					t.Fatalf("ParseMeta error = %v, want one problem", err)
				}
				if all[0].Field != tc.errField || all[0].Line != 1 || !strings.Contains(all[0].Msg, tc.errMsg) {
					t.Errorf("problem %+v, want field %q on line 1 saying %q", all[0], tc.errField, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMeta: %v", err)
			}
			if !strings.Contains(strings.Join(m.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q, want %q", m.Warnings, tc.warning)
			}
		})
	}
}

func TestNearMiss(t *testing.T) {
	known := topFieldNames
	tests := []struct {
		key, want string
	}{
		{"readonly", "readOnly"}, {"READ-ONLY", "readOnly"}, {"raedOnly", "readOnly"}, {"readOnlyy", "readOnly"},
		{"cmd_", "cmd"}, {"cdm", "cmd"}, {"cwd", "cmd"},
		{"colour", ""}, {"tags", ""}, {"name", ""}, {"version", ""}, {"author", ""}, {"type", ""},
	}
	for _, tc := range tests {
		got, ok := nearMiss(tc.key, known)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("nearMiss(%q) = %q, %v; want %q", tc.key, got, ok, tc.want)
		}
	}
}
