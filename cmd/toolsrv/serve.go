package main

import "context"

// runServe is a placeholder until its owner lands the real command.
func runServe(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "serve")
}
