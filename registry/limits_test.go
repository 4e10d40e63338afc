package registry

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"1073741824", 1 << 30, false}, {"512MiB", 512 << 20, false}, {"2G", 2 << 30, false},
		{"2 GiB", 2 << 30, false}, {"1.5GB", 1_500_000_000, false}, {"64k", 64 << 10, false},
		{"", 0, true}, {"lots", 0, true}, {"-1G", 0, true}, {"3 parsecs", 0, true}, {"1e400", 0, true},
	} {
		got, err := ParseSize(c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestMetaLimits(t *testing.T) {
	for _, c := range []struct {
		meta string
		want ToolLimits
		err  string
	}{
		{`{"description":"d","limits":{"processes":64,"memory":"512MiB"}}`, ToolLimits{Processes: 64, Memory: 512 << 20}, ""},
		{`{"description":"d","limits":{"memory":1073741824}}`, ToolLimits{Memory: 1 << 30}, ""},
		{`{"description":"d","limits":{"fileSize":"4GiB","tempSize":"256MiB"}}`, ToolLimits{FileSize: 4 << 30, TempSize: 256 << 20}, ""},
		{`{"description":"d","limits":{"fileSize":"1k"}}`, ToolLimits{}, `"fileSize" must be at least 1 MiB`},
		{`{"description":"d","limits":{"tempSize":true}}`, ToolLimits{}, `"tempSize" must be a number of bytes`},
		{`{"description":"d","limits":{"procs":64}}`, ToolLimits{}, `unknown limit "procs"`},
		{`{"description":"d","limits":{"processes":0}}`, ToolLimits{}, "at least 1"},
		{`{"description":"d","limits":{"memory":"10"}}`, ToolLimits{}, "at least 1 MiB"},
		{`{"description":"d","limits":[64]}`, ToolLimits{}, "must be an object"},
		{`{"description":"d","limit":{"processes":64}}`, ToolLimits{}, `did you mean "limits"`},
		{`{"description":"d","variants":[{"limits":{"processes":8}}]}`, ToolLimits{Processes: 8}, ""},
	} {
		m, err := ParseMeta([]byte(c.meta))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.meta, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.meta, err)
			continue
		}
		got, ok := m.fields["limits"].(ToolLimits)
		if len(m.Variants) > 0 {
			got, ok = m.Variants[0].fields["limits"].(ToolLimits)
		}
		if !ok || got != c.want {
			t.Errorf("%s: limits %+v, want %+v", c.meta, got, c.want)
		}
	}
}
