package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestChartIsCurrent fails when charts/kubectl-rightsize is not what
// genchart makes of config/ now: a file differs, is missing or is left over.
// helm lint, helm template against `operator install` and helm install are
// tested in test/e2e/helm_test.go (they need the helm binary).
func TestChartIsCurrent(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", chartDir)
	onDisk, err := chartFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range onDisk {
		if _, ok := files[name]; !ok {
			t.Errorf("%s/%s is not generated any more: run make generate", chartDir, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%v: run make generate", err)
			continue
		}
		if !bytes.Equal(b, files[name]) {
			t.Errorf("%s/%s differs from what hack/genchart generates: run make generate", chartDir, name)
		}
	}
}

// TestGenerateLeavesNoPlaceholder checks every field the generator marked
// became template text, and each template reads the values it should.
func TestGenerateLeavesNoPlaceholder(t *testing.T) {
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if bytes.Contains(b, []byte("__chart_")) {
			t.Errorf("%s keeps a placeholder:\n%s", name, b)
		}
	}
	tests := []struct {
		file string
		want []string
	}{
		{"templates/deployment.yaml", []string{"{{ .Values.replicas }}", "kubectl-rightsize.image", "{{ .Values.image.pullPolicy }}",
			"with .Values.resources", "with .Values.nodeSelector", "with .Values.tolerations", "with .Values.affinity",
			`"--region=%s"`, `"--cluster-endpoint=%s"`, `"--kubernetes-version=%s"`, `"--interruption-queue=%s"`, "range .Values.extraArgs",
			`name: {{ include "kubectl-rightsize.configMapName" . }}`, "namespace: {{ .Release.Namespace }}"}},
		{"templates/configmap.yaml", []string{"kubectl-rightsize.validate", "cloud: {{ .Values.cloud | quote }}", "kubectl-rightsize.clusterName"}},
		{"templates/serviceaccount.yaml", []string{"with .Values.serviceAccount.annotations"}},
		{"templates/namespace.yaml", []string{"if .Values.namespace.create", "name: {{ .Release.Namespace }}", "pod-security.kubernetes.io/enforce: restricted"}},
		{"templates/clusterrolebinding.yaml", []string{"namespace: {{ .Release.Namespace }}"}},
		// Node create only for the simulated cloud.
		{"templates/sim-clusterrole.yaml", []string{`{{- if eq .Values.cloud "sim" }}`, "name: rightsize-operator-sim", "- create"}},
		{"templates/sim-clusterrolebinding.yaml", []string{`{{- if eq .Values.cloud "sim" }}`, "namespace: {{ .Release.Namespace }}"}},
		{"templates/_helpers.tpl", []string{`(has .Release.Namespace (list "default"))`, `(hasPrefix "kube-" .Release.Namespace)`}},
		{"crds/nodepools.rightsize.dev.yaml", []string{"kind: CustomResourceDefinition"}},
	}
	for _, tc := range tests {
		got := string(files[tc.file])
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q", tc.file, w)
			}
		}
	}
	if strings.Contains(string(files["templates/clusterrole.yaml"]), "{{") {
		t.Errorf("the ClusterRole reads values; it should be config/rbac/role.yaml as rendered")
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(files["templates/clusterrole.yaml"], &role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "nodes") && slices.Contains(r.Verbs, "create") {
			t.Errorf("the ClusterRole of every cloud grants node create: %+v", r)
		}
	}
	if len(role.Rules) == 0 {
		t.Errorf("templates/clusterrole.yaml has no rules")
	}
	if _, ok := files["templates/priorityclass.yaml"]; ok {
		t.Errorf("the chart makes a PriorityClass; the operator runs as system-cluster-critical")
	}
}

// TestGenerateForPinsTheImage checks the chart a release packages: with the
// pushed image's repository@sha256:… its values.yaml defaults to that
// repository and digest, and every other file is the checked-in chart's;
// references that do not pin a digest are refused.
func TestGenerateForPinsTheImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image    string
		wantRepo string
		wantErr  bool
	}{
		{"ghcr.io/rightsize-dev/kubectl-rightsize@" + digest, "ghcr.io/rightsize-dev/kubectl-rightsize", false},
		{"127.0.0.1:5000/mirror/rightsize@" + digest, "127.0.0.1:5000/mirror/rightsize", false},
		{"ghcr.io/rightsize-dev/kubectl-rightsize:v1.2.3", "", true},
		{"ghcr.io/rightsize-dev/kubectl-rightsize:v1.2.3@" + digest, "", true},
		{"ghcr.io/rightsize-dev/kubectl-rightsize@sha256:abc", "", true},
		{"ghcr.io/rightsize-dev/kubectl-rightsize@" + strings.ToUpper(digest), "", true},
	}
	plain, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.image, func(t *testing.T) {
			files, err := GenerateFor(tc.image)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "want repository@sha256:") {
					t.Fatalf("GenerateFor(%q): %v, want a refusal", tc.image, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var values struct {
				Image struct{ Repository, Tag, Digest string }
			}
			if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
				t.Fatal(err)
			}
			if values.Image.Repository != tc.wantRepo || values.Image.Digest != digest || values.Image.Tag != "" {
				t.Errorf("values.yaml image %+v, want repository %s, digest %s, no tag", values.Image, tc.wantRepo, digest)
			}
			for name, b := range plain {
				if name != "values.yaml" && !bytes.Equal(files[name], b) {
					t.Errorf("%s differs from the unpinned chart's", name)
				}
			}
		})
	}
}
