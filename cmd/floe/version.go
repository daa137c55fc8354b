package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func runVersion(_ context.Context, env *cliEnv, _ []string) error {
	version, revision := "(devel)", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	fmt.Fprintf(env.stdout, "floe %s %s\n", version, revision)
	return nil
}
