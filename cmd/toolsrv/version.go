package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

// runVersion prints the version this binary was built from.
func runVersion(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "version", "version",
		"Prints the module version and the VCS revision this binary was built from\n"+
			"(\"(devel)\" when the build does not record them). Also: toolsrv --version.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "takes no arguments")
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(env.stdout, versionLine(bi, ok))
	return 0
}

// versionLine renders build information: "toolsrv VERSION", then the VCS
// revision, its time and whether the tree was modified, when recorded.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	version := "(devel)"
	if ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	var rev, at string
	modified := false
	if ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "toolsrv %s", version)
	if rev != "" {
		fmt.Fprintf(&b, " (revision %s", rev)
		if at != "" {
			fmt.Fprintf(&b, ", %s", at)
		}
		if modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	if ok && bi.GoVersion != "" {
		fmt.Fprintf(&b, " %s", bi.GoVersion)
	}
	return b.String()
}

// buildText is this binary's version line, for the 9P /version file.
func buildText() string {
	bi, ok := debug.ReadBuildInfo()
	return versionLine(bi, ok)
}
