package importcmd

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

func TestImportCommand(t *testing.T) {
	const seed = "../../snapshot/testdata/seed"
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantOut    []string
		wantErrOut []string
		wantErr    string
	}{
		{"seed as YAML", []string{"-f", seed},
			"", []string{"kind: EC2NodeClass", "---\n", "kind: NodePool", "karpenter.sh/provisioner-name: default", "alias: al2@latest"},
			[]string{"Warning: " + seed + "/02-provisioner.yaml: document 1: Provisioner \"default\": spec.disruption.budgets[0] dropped"}, ""},
		{"seed as JSON", []string{"-f", seed, "-o", "json"},
			"", []string{`"kind": "List"`, `"kind": "NodePool"`}, nil, ""},
		{"stdin", []string{"-f", "-"},
			"apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: p}\nspec: {ttlSecondsAfterEmpty: 60}\n",
			[]string{"consolidateAfter: 1m", "consolidationPolicy: WhenEmpty"},
			[]string{"spec.ttlSecondsAfterEmpty: 60 became spec.disruption.consolidationPolicy: WhenEmpty with consolidateAfter: 1m"}, ""},
		{"help explains the labels", []string{"--help"}, "", []string{"karpenter.sh/provisioner-name: X", "kubectl rightsize import -f karpenter/ | kubectl apply -f -"}, nil, ""},
		{"no -f", nil, "", nil, nil, "no input: give the Karpenter manifests with -f"},
		{"bad output", []string{"-f", seed, "-o", "table"}, "", nil, nil, `unknown output format "table": use -o yaml or -o json`},
		{"missing file", []string{"-f", "testdata/nope.yaml"}, "", nil, nil, "testdata/nope.yaml: no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, in, out, errOut := genericiooptions.NewTestIOStreams()
			in.WriteString(tc.stdin)
			cmd := NewCmdImport(streams, nil)
			cmd.SetOut(out)
			cmd.SetArgs(tc.args)
			err := cmd.Execute()
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantErrOut {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut.String())
				}
			}
		})
	}
}
