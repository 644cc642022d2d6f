package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode: it must not panic, and any
// error must be one line naming the input.
func FuzzDecode(f *testing.F) {
	for _, data := range seedFiles(f) {
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "apps/v1", "kind": "Job"}]}`))
	f.Add([]byte("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {parallelism: 2, template: {spec: {containers: [{name: c, resources: {limits: {a.io/b: 1}}}]}}}}}\n"))
	f.Add([]byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: np}\nspec: {limits: {cpu: 1}, template: {spec: {requirements: [{key: a, operator: Gt, values: ['1']}]}}}\n"))
	for _, name := range []string{"ebs-bound.yaml", "immediate-unbound.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "cmd", "explaincmd", "testdata", "volumes", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &Manifests{}
		err := Decode("in.yaml", data, m)
		if err != nil {
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "in.yaml: document ") {
				t.Fatalf("bad error message %q", msg)
			}
		} else if _, err := m.finish([]string{"in.yaml"}); err != nil && strings.ContainsAny(err.Error(), "\r\n") {
			// What spans documents (volumes, autoscalers) is applied too.
			t.Fatalf("finishing: error has several lines: %q", err)
		}
		for _, w := range m.Warnings {
			if strings.ContainsAny(w, "\r\n") {
				t.Fatalf("warning has several lines: %q", w)
			}
		}
		for _, p := range m.Pods {
			for _, v := range p.Requests {
				if v < 0 {
					t.Fatalf("negative request in %+v", p)
				}
			}
		}
	})
}

// seedFiles are the fuzzers' seed inputs: the files in testdata/seed.
func seedFiles(f *testing.F) [][]byte {
	files, err := filepath.Glob("testdata/seed/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files: %v", err)
	}
	var out [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}
