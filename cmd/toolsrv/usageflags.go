package main

import (
	"context"
	"flag"
	"fmt"

	usagedb "github.com/toolsrv/toolsrv/usage"
)

// NoUsageEnv turns the usage history off, as --no-usage does.
const NoUsageEnv = "TOOLSRV_NO_USAGE"

// historyFlags are the flags of the commands that rank with or record the
// usage history (rank, serve, mcp, call).
type historyFlags struct {
	target  usageTarget
	noUsage bool
}

func addHistoryFlags(fs *flag.FlagSet) *historyFlags {
	f := &historyFlags{}
	fs.StringVar(&f.target.db, "usage-db", "", usageDBHelp)
	fs.StringVar(&f.target.ns, "usage-namespace", "", usageNamespaceHelp)
	fs.BoolVar(&f.noUsage, "no-usage", false, "neither record nor use the usage history (also $"+NoUsageEnv+"=1)")
	return f
}

// off reports whether the usage history is turned off.
func (f *historyFlags) off(env *cliEnv) bool {
	return f.noUsage || env.getenv(NoUsageEnv) == "1" || env.getenv(NoUsageEnv) == "true"
}

// open opens the usage history for cmd (nil when it is turned off). A store
// that cannot be opened is a warning: toolsrv goes on without it.
func (f *historyFlags) open(ctx context.Context, env *cliEnv, cmd string) usagedb.Store {
	if f == nil || f.off(env) {
		return nil
	}
	s, err := openUsage(ctx, env, cmd, &f.target, usagedb.Options{})
	if err != nil {
		fmt.Fprintf(env.stderr, "toolsrv %s: warning: the usage history is not used: %v\n", cmd, err)
		return nil
	}
	return s
}
