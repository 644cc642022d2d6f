package version

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

func TestVersionRun(t *testing.T) {
	info := Info{Version: "v1.2.3", Commit: "4f07bec", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.0"}
	tests := []struct {
		name    string
		opts    VersionOptions
		want    string
		wantErr string
	}{
		{"one line", VersionOptions{Info: info}, "kubectl-rightsize v1.2.3 (commit 4f07bec, built 2026-12-01T00:00:00Z, go1.26.0)\n", ""},
		{"a dirty build marks its commit", VersionOptions{Info: Info{Version: "dev", Commit: "4f07bec", GoVersion: "go1.26.0", Modified: true}},
			"kubectl-rightsize dev (commit 4f07bec-dirty, built unknown, go1.26.0)\n", ""},
		{"unknown commit and date", VersionOptions{Info: Info{Version: "dev", GoVersion: "go1.26.0"}}, "kubectl-rightsize dev (commit unknown, built unknown, go1.26.0)\n", ""},
		{"json", VersionOptions{Info: info, Output: "json"}, `"commit": "4f07bec"`, ""},
		{"bad output", VersionOptions{Info: info, Output: "yaml"}, "", `--output "yaml": must be json or empty`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			tc.opts.IOStreams = streams
			err := tc.opts.Validate()
			if err == nil {
				err = tc.opts.Run()
			}
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("output %q, want %q", out.String(), tc.want)
			}
			if tc.opts.Output == "json" {
				var got Info
				if err := json.Unmarshal(out.Bytes(), &got); err != nil || got != info {
					t.Errorf("json %q: %+v, %v", out.String(), got, err)
				}
			}
		})
	}
}

func TestCurrentKeepsWhatWasStamped(t *testing.T) {
	got := Current(Info{Version: "v0.3.1", Commit: "abc", Date: "yesterday"})
	if got.Version != "v0.3.1" || got.Commit != "abc" || got.Date != "yesterday" || !strings.HasPrefix(got.GoVersion, "go") {
		t.Errorf("Current = %+v", got)
	}
	if v := Current(Info{}).Version; v == "" || v == "(devel)" {
		t.Errorf("an unstamped build is version %q, want dev or the module's", v)
	}
}

func TestFromBuildInfoMarksDirtyBuilds(t *testing.T) {
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "4f07bec"}, {Key: "vcs.time", Value: "2026-12-01T00:00:00Z"}, {Key: "vcs.modified", Value: modified}}}
	}
	tests := []struct {
		name    string
		stamped Info
		info    *debug.BuildInfo
		want    Info
	}{
		{"go build of a clean tree", Info{}, vcs("false"),
			Info{Version: "dev", Commit: "4f07bec", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.0"}},
		{"go build of a tree with changes", Info{}, vcs("true"),
			Info{Version: "dev", Commit: "4f07bec", Date: "2026-12-01T00:00:00Z", GoVersion: "go1.26.0", Modified: true}},
		{"a release stamped over a dirty build info", Info{Version: "1.2.3", Commit: "abc", Date: "today"}, vcs("true"),
			Info{Version: "1.2.3", Commit: "abc", Date: "today", GoVersion: "go1.26.0", Modified: true}},
		{"the Makefile's git describe --dirty, built without VCS info", Info{Version: "v0.3.1-2-g4f07bec-dirty"}, &debug.BuildInfo{GoVersion: "go1.26.0"},
			Info{Version: "v0.3.1-2-g4f07bec-dirty", GoVersion: "go1.26.0", Modified: true}},
		{"go build's own version of a dirty tree", Info{}, &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261201000000-4f07bec00000+dirty"}},
			Info{Version: "v0.0.0-20261201000000-4f07bec00000+dirty", GoVersion: "go1.26.0", Modified: true}},
		{"a clean tag", Info{Version: "v0.3.1"}, &debug.BuildInfo{GoVersion: "go1.26.0"}, Info{Version: "v0.3.1", GoVersion: "go1.26.0"}},
		{"no build info", Info{}, nil, Info{Version: "dev"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.stamped, tc.info); got != tc.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewCmdVersionParsesIntoOptions(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	var got *VersionOptions
	cmd := NewCmdVersion(streams, Info{Version: "v9.9.9"}, func(o *VersionOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Output != "json" || got.Info.Version != "v9.9.9" {
		t.Fatalf("parsed %+v", got)
	}
}
