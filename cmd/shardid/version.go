package main

import "runtime/debug"

// develVersion is the version of a command built from a source tree
// rather than installed at a tagged version.
const develVersion = "(devel)"

// version is the command's module version, as the Go toolchain recorded it.
func version() string { return versionOf(debug.ReadBuildInfo()) }

func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info.Main.Version == "" {
		return develVersion
	}
	return info.Main.Version
}
