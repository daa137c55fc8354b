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
			output := fs.String("output", "text", "output format: text or json")
			return func(context.Context, []string) error {
				switch *output {
				case "text":
					_, err := fmt.Fprintln(env.stdout, versionString())
					return err
				case "json":
					return printJSON(env, map[string]string{"version": versionString()})
				}
				return fmt.Errorf("%w: --output must be text or json", errUsage)
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
