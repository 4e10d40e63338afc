package main

import "context"

// runTune is a placeholder until its owner lands the real command.
func runTune(ctx context.Context, env *cliEnv, args []string) int {
	return notYet(env, "tune")
}
