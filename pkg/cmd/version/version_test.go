package version

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
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
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
