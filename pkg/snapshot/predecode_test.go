package snapshot

import (
	"strings"
	"testing"
)

// TestPredecodeCleanPod: a Pod that decodes into its type without a
// problem skips the generic decoding; any other document, or a Pod with
// a strict-field problem or an error, still gets it, and decodes as it
// did (the warning, the error).
func TestPredecodeCleanPod(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: \"1\"}}}]}\n"
	for _, tc := range []struct {
		name      string
		doc       string
		clean     bool
		warning   string // in m.Warnings when set
		err       string // Decode's error when set
		wantPods  int
		wantNames []string
	}{
		{name: "clean pod", doc: pod, clean: true, wantPods: 1, wantNames: []string{"a"}},
		{name: "clean pod as JSON", doc: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, clean: true, wantPods: 1, wantNames: []string{"j"}},
		{name: "unknown field", doc: strings.Replace(pod, "spec: {", "spec: {nodeSelectr: {a: b}, ", 1), warning: "nodeSelectr", wantPods: 1},
		{name: "bad quantity", doc: strings.Replace(pod, `cpu: "1"`, `cpu: "1x"`, 1), err: "quantit"},
		{name: "not v1", doc: strings.Replace(pod, "apiVersion: v1", "apiVersion: v2", 1), warning: "not supported"},
		{name: "deployment", doc: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n", wantPods: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := predecode(document{data: []byte(tc.doc), json: strings.HasPrefix(tc.doc, "{")})
			if d.cleanPod != tc.clean || (d.cleanPod && d.generic != nil) || (!d.cleanPod && d.err == nil && d.generic == nil) {
				t.Fatalf("cleanPod %v (want %v), generic decoded %v", d.cleanPod, tc.clean, d.generic != nil)
			}
			var m Manifests
			err := Decode("in.yaml", []byte(tc.doc), &m)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Decode: %v, want an error with %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(m.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q, want one with %q", m.Warnings, tc.warning)
			}
			if len(m.Pods) != tc.wantPods {
				t.Errorf("%d pods, want %d", len(m.Pods), tc.wantPods)
			}
			for i, name := range tc.wantNames {
				if m.Pods[i].Name != name {
					t.Errorf("pod %d named %q, want %q", i, m.Pods[i].Name, name)
				}
			}
		})
	}
}
