package main

import "context"

// runEval is a placeholder until its owner lands the real command.
func runEval(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "eval")
}
