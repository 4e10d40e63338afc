package main

import "context"

// runBench is a placeholder until its owner lands the real command.
func runBench(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "bench")
}
