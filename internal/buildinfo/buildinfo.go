// Package buildinfo reports the version of the running jobd binary, read
// from the build information the Go toolchain embeds in every binary.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Version returns the binary's version: the module version when it was
// built from a tagged module (`go install github.com/jobd/jobd/cmd/jobd@v1.2.3`),
// otherwise "devel" followed by the VCS revision (and "+dirty" for a work
// tree with uncommitted changes) when the toolchain recorded one.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(info)
})

// fromBuildInfo derives the version string from info.
func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	v := "devel"
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		v += " " + revision
		if modified == "true" {
			v += "+dirty"
		}
	}
	return v
}
