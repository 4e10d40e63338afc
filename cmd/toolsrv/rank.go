package main

import "context"

// runRank is a placeholder until its owner lands the real command.
func runRank(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "rank")
}
