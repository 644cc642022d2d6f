package explain

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		arg, want, err string
	}{
		{"web-0", "Pod/web-0", ""},
		{"pod/web-0", "Pod/web-0", ""},
		{"po/web-0", "Pod/web-0", ""},
		{"deployment/web", "Deployment/web", ""},
		{"deploy/web", "Deployment/web", ""},
		{"Deployment.apps/web", "Deployment/web", ""},
		{"sts/db", "StatefulSet/db", ""},
		{"cronjob/nightly", "CronJob/nightly", ""},
		{"service/web", "", `unknown workload type "service"`},
		{"deployment/", "", "want POD, pod/NAME or TYPE/NAME"},
		{"a/b/c", "", "want POD, pod/NAME or TYPE/NAME"},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.arg)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.arg, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.arg, err)
		case w.String() != tc.want:
			t.Errorf("%q: %s, want %s", tc.arg, w, tc.want)
		}
	}
}

func TestWorkloadMatches(t *testing.T) {
	tests := []struct {
		workload, pod, owner string
		want                 bool
	}{
		{"web-0", "web-0", "StatefulSet/web", true},
		{"deployment/web", "web-5d8f-x", "Deployment/web", true},
		{"deployment/web", "web2-5d8f-x", "Deployment/web2", false},
		{"statefulset/web", "web-0", "Deployment/web", false},
		{"cronjob/nightly", "nightly-29000000-x", "Job/nightly-29000000", true},
		{"cronjob/nightly", "nightly-extra-1-x", "Job/nightly-extra-1", false},
		{"job/nightly-29000000", "nightly-29000000-x", "Job/nightly-29000000", true},
	}
	for _, tc := range tests {
		w, err := parseWorkload(tc.workload)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.matches(tc.pod, tc.owner); got != tc.want {
			t.Errorf("%s matches %s (%s) = %v, want %v", tc.workload, tc.pod, tc.owner, got, tc.want)
		}
	}
}

func TestCompleteUsesTheKubeconfigWhenNoFilesAreGiven(t *testing.T) {
	flags := func(path string) *genericclioptions.ConfigFlags {
		f := genericclioptions.NewConfigFlags(false)
		f.KubeConfig = &path
		return f
	}
	tests := []struct {
		name    string
		opts    Options
		args    []string
		wantErr string
	}{
		{"a usable kubeconfig is input", Options{Cluster: flags("../../cmd/kubectl-rightsize/testdata/kubeconfig")}, nil, ""},
		{"a workload with a kubeconfig", Options{Cluster: flags("../../cmd/kubectl-rightsize/testdata/kubeconfig")}, []string{"deploy/web"}, ""},
		{"a missing kubeconfig is no input", Options{Cluster: flags("testdata/missing")}, nil, "no input: pass manifests with -f FILE, -f DIR or -f -, or point at a cluster with --kubeconfig or --context (the kubeconfig cannot be used: stat testdata/missing"},
		{"no cluster at all", Options{}, nil, "(no kubeconfig found)"},
		{"two workloads", Options{Cluster: flags("../../cmd/kubectl-rightsize/testdata/kubeconfig")}, []string{"a", "b"}, "at most one workload"},
		{"a workload with -f", Options{Filenames: []string{"x.yaml"}}, []string{"pod/a"}, "needs a live cluster"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Complete(tc.args)
			if err == nil {
				err = tc.opts.Validate()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && (tc.opts.restConfig == nil || tc.opts.restConfig.Timeout != DefaultRequestTimeout || tc.opts.namespace != "default"):
				t.Errorf("cluster not resolved: %+v", tc.opts)
			}
		})
	}
}
