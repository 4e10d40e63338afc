package main

import "context"

// run9P is a placeholder until its owner lands the real command.
func run9P(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "ninep")
}
