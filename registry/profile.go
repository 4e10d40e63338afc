package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Profile is an agent profile (SPEC §7): the tools an agent loads at start
// and, when AllowTools is not nil, the only tools it may load or be offered.
type Profile struct {
	Name       string    `json:"name"`
	AutoLoad   []string  `json:"autoLoad,omitempty"`
	AllowTools *[]string `json:"allowTools,omitempty"`
}

// Allows reports whether the profile lets its agent load or see tool.
func (p *Profile) Allows(tool string) bool {
	if p == nil || p.AllowTools == nil {
		return true
	}
	for _, t := range *p.AllowTools {
		if t == tool {
			return true
		}
	}
	return false
}

// DefaultAgentsDir is ~/.config/ollie/agents.
func DefaultAgentsDir(getenv func(string) string) string {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "ollie", "agents")
}

// LoadProfile reads dir/NAME.json. An agent without a profile file gets an
// empty profile (nothing auto-loaded, everything allowed), so agents work
// before anyone writes profiles.
func LoadProfile(dir, name string) (*Profile, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("agent name %q: %w", name, err)
	}
	p := &Profile{Name: name}
	path := filepath.Join(dir, name+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("agent profile: %w", err)
	}
	var raw struct {
		AutoLoad   []string  `json:"autoLoad"`
		AllowTools *[]string `json:"allowTools"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("agent profile %s: %w; it must be a JSON object such as {\"autoLoad\": [\"file_read\"]}", path, err)
	}
	p.AutoLoad, p.AllowTools = raw.AutoLoad, raw.AllowTools
	return p, nil
}
