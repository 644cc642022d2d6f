package operatorcmd

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/config"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/internal/cmdtest"
)

func TestOperatorInstall(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"prints the manifests for aws", []string{"--cluster-name", "prod", "--region", "eu-west-1"},
			[]string{"kind: Deployment", "cloud: aws", "cluster-name: prod", "--region=eu-west-1", "image: " + config.ImageRepository + ":latest"}, ""},
		{"sim needs no cluster name", []string{"--cloud", "sim"}, []string{"cloud: sim", "cluster-name: rightsize"}, ""},
		{"-n moves everything", []string{"--cloud", "sim", "-n", "ops"}, []string{"name: ops\n", "namespace: ops"}, ""},
		{"an image tag", []string{"--cloud", "sim", "--image", "v9.9.9"}, []string{"image: " + config.ImageRepository + ":v9.9.9"}, ""},
		{"IRSA", []string{"--cluster-name", "prod", "--iam-role-arn", "arn:aws:iam::1:role/r"}, []string{"eks.amazonaws.com/role-arn: arn:aws:iam::1:role/r"}, ""},
		{"the interruption queue is passed on", []string{"--cluster-name", "prod", "--interruption-queue", "prod-interruptions"},
			[]string{"--interruption-queue=prod-interruptions"}, ""},
		{"no interruption queue with sim", []string{"--cloud", "sim", "--interruption-queue", "q"}, nil, "an interruption queue is for --cloud aws"},
		{"aws needs a cluster name", nil, nil, "--cluster-name is required with --cloud aws"},
		{"unknown cloud", []string{"--cloud", "gcp"}, nil, `cloud "gcp" is not supported`},
		{"kube-system is refused", []string{"--cluster-name", "prod", "-n", "kube-system"}, nil,
			"namespace kube-system is shared with the cluster's own workloads: the manifests would label it with the restricted Pod Security Standard"},
		{"default is refused", []string{"--cloud", "sim", "-n", "default"}, nil, "or leave default as it is with --create-namespace=false"},
		{"kube-public is refused", []string{"--cloud", "sim", "-n", "kube-public"}, nil, "namespace kube-public is shared"},
		{"kube-system without the Namespace", []string{"--cluster-name", "prod", "-n", "kube-system", "--create-namespace=false"},
			[]string{"namespace: kube-system", "name: rightsize-operator\n  namespace: kube-system"}, ""},
		{"apply into default without the Namespace needs a cluster", []string{"--cloud", "sim", "-n", "default", "--create-namespace=false",
			"--apply", "--kubeconfig", "../testdata/kubeconfig", "--request-timeout", "5s"}, nil, "cannot map the operator manifests"},
		{"apply needs a cluster", []string{"--cloud", "sim", "--apply", "--kubeconfig", "../testdata/kubeconfig", "--request-timeout", "5s"}, nil, "cannot map the operator manifests"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams, _, out, _ := genericiooptions.NewTestIOStreams()
			flags := genericclioptions.NewConfigFlags(true)
			cmd := NewCmdOperatorInstall(streams, flags, "", nil)
			flags.AddFlags(cmd.Flags())
			cmd.SetArgs(tc.args)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if cmdtest.WantErr(t, err, tc.wantErr) {
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q", w)
				}
			}
			// The Namespace, and its Pod Security labels, only with
			// --create-namespace (the default).
			ns := strings.Contains(out.String(), "\nkind: Namespace\n")
			pss := strings.Contains(out.String(), "pod-security.kubernetes.io/enforce: restricted")
			if want := !slices.Contains(tc.args, "--create-namespace=false"); ns != want || pss != want {
				t.Errorf("Namespace printed %t, Pod Security labels %t; want %t", ns, pss, want)
			}
			if err := config.Lint(out.Bytes()); err != nil {
				t.Errorf("printed manifests fail the lint: %v", err)
			}
		})
	}
}

func TestImageTagFollowsTheVersion(t *testing.T) {
	for version, want := range map[string]string{
		"0.3.1": "v0.3.1", "v0.3.1": "v0.3.1", "1.0.0-rc.1": "v1.0.0-rc.1",
		"0.0.1-snapshot-4f07bec": "v0.0.1-snapshot-4f07bec", "dev": "latest", "4f07bec-dirty": "latest",
		"v1.2.3-4-gabc1234": "latest", "v1.2.3-dirty": "latest", "1.2.3+dirty": "latest", "v1.2.3-4-gabc1234-dirty": "latest",
		// Go pseudo-versions, which `go install` of an untagged commit stamps.
		"v0.0.0-20261204204816-f7321e759eec": "latest", "v1.2.4-0.20261204204816-f7321e759eec": "latest",
	} {
		if got := imageTag(version); got != want {
			t.Errorf("imageTag(%q) = %s, want %s", version, got, want)
		}
	}
}
