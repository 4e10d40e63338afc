package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

// agentProfile loads the profile of --agent name from dir, and, unlike
// registry.LoadProfile (which gives an agent without a file an empty
// profile, so that 9P agents work before anyone writes profiles), refuses
// a name that has no profile file: on the command line that is a typo, and
// ranking everything would hide it.
func agentProfile(dir, name string) (*registry.Profile, error) {
	p, err := registry.ReadProfile(dir, name)
	if errors.Is(err, registry.ErrNoProfile) {
		path := filepath.Join(dir, name+".json")
		return nil, fmt.Errorf("no profile for agent %q: %s does not exist (agents directory %s%s); write it, e.g. {\"allowTools\": [\"file_read\"]}, or leave out --agent",
			name, path, dir, profilesIn(dir))
	}
	return p, err
}

// profilesIn says which profiles dir holds, for an error message.
func profilesIn(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ", which does not exist"
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ", which holds no profiles"
	}
	sort.Strings(names)
	return "; profiles there: " + strings.Join(names, ", ")
}
