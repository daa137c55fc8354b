package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"runtime/debug"
)

// version and revision are stamped by the build, as Taskfile.yml's build
// task and deploy/build.sh do:
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.revision=$(git rev-parse HEAD)" ./cmd/floe
//
// Left empty, they come from the binary's build information: the module
// version (go install ...@v0.3.0) and the VCS revision go build stamps in a
// checkout (not with -buildvcs=false, nor in a copy without .git).
var version, revision string

func versionSpec(env *cliEnv) cmdSpec {
	return cmdSpec{usage: "version", summary: "print the version (as floe --version does)",
		define: func(fs *flag.FlagSet) runFunc {
			var output string
			outputVar(fs, &output, "")
			return func(context.Context, []string) error {
				v, rev := versionAndRevision()
				if output == "json" {
					return printJSON(env, map[string]string{"version": v, "revision": rev})
				}
				_, err := fmt.Fprintln(env.stdout, versionString())
				return err
			}
		}}
}

// versionString is "floe VERSION REVISION", or "floe VERSION" when the
// revision is unknown.
func versionString() string {
	v, rev := versionAndRevision()
	if rev == "" {
		return "floe " + v
	}
	return "floe " + v + " " + rev
}

// versionAndRevision are the stamped version and revision, each falling
// back on the build information; the version on "(devel)".
func versionAndRevision() (v, rev string) {
	v, rev = version, revision
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(v, "(devel)"), rev
	}
	if v == "" {
		v = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && rev == "" {
			rev = s.Value
		}
	}
	return cmp.Or(v, "(devel)"), rev
}
