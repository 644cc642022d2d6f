package snapshot

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestInputKustomize(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "base", "kustomization.yaml"), "resources: [web.yaml]\n")
	writeFile(t, filepath.Join(dir, "base", "web.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}\n")
	writeFile(t, filepath.Join(dir, "prod", "kustomization.yaml"), "resources: [../base]\nnamespace: shop\nnamePrefix: prod-\nreplicas: [{name: web, count: 3}]\n")

	m, err := Input{Kustomizations: []string{filepath.Join(dir, "prod")}}.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m.Pods {
		names = append(names, p.Key())
	}
	if got, want := strings.Join(names, ","), "shop/prod-web-0,shop/prod-web-1,shop/prod-web-2"; got != want {
		t.Errorf("pods %s, want %s: the overlay's namespace, prefix and replicas apply", got, want)
	}

	if _, err := (Input{Kustomizations: []string{filepath.Join(dir, "nope")}}).Read(nil); err == nil || !strings.Contains(err.Error(), "kustomize "+filepath.Join(dir, "nope")) {
		t.Errorf("missing kustomization: err %v", err)
	}

	m, err = Input{Filenames: []string{filepath.Join(dir, "base")}}.Read(nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range m.Warnings {
		found = found || strings.Contains(w, "a kustomization: plan what it renders with -k "+filepath.Join(dir, "base"))
	}
	if !found {
		t.Errorf("-f on a kustomization directory: warnings %q lack the -k hint", m.Warnings)
	}
}

func TestInputStrict(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}], nodeSelectr: {a: b}}\n")
	if _, err := (Input{Filenames: []string{dir}, Strict: true}).Read(nil); err == nil || !strings.Contains(err.Error(), `unknown field "spec.nodeSelectr"`) {
		t.Errorf("strict: err %v", err)
	}
	m, err := Input{Filenames: []string{dir}}.Read(nil)
	if err != nil || len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "did you mean nodeSelector? without it the pod may run on any node") {
		t.Errorf("lenient: %v, warnings %q", err, m.Warnings)
	}
}
