package main

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

func versionSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "version", summary: "print the version (as floe --version does)",
		define: func(fs *flag.FlagSet) runFunc {
			var output string
			outputVar(fs, &output, "")
			return func(context.Context, []string) error {
				if output == "json" {
					return printJSON(env, map[string]string{"version": versionString()})
				}
				_, err := fmt.Fprintln(env.stdout, versionString())
				return err
			}
		}}
}

// versionString is "floe VERSION REVISION", from the build information.
func versionString() string {
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
	return fmt.Sprintf("floe %s %s", version, revision)
}
