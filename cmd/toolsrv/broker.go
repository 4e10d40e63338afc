package main

import "context"

// runBroker is a placeholder until its owner lands the real command.
func runBroker(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "broker")
}
