package main

import "context"

// runCall is a placeholder until its owner lands the real command.
func runCall(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "call")
}
