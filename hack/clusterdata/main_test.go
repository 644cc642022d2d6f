package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestConvert(t *testing.T) {
	tests := []struct {
		name      string
		o         options
		wantNames []string
		wantIn    []string // fragments the output must hold
	}{
		{
			name:      "openb: every row, GPUs whole, models as affinity",
			o:         options{in: "testdata/openb.csv", cpu: true, gpu: true, firstCN: -1, firstHN: -1},
			wantNames: []string{"made-0", "made-1", "made-2", "made-3"},
			wantIn:    []string{"cpu: 6000m", "memory: 12288Mi", "nvidia.com/gpu: 2", `values: ["t4", "v100"]`, `values: ["g2"]`},
		},
		{
			name:      "openb: CPU pods only",
			o:         options{in: "testdata/openb.csv", cpu: true, gpu: false, firstCN: -1, firstHN: -1},
			wantNames: []string{"made-0"},
		},
		{
			// Alive at 150: instance_0 (always), instance_1 (100-200),
			// instance_2 (from 150); instance_4 ended at 90; instance_3
			// starts at 200. At 150-199 three are alive, the most at any time.
			name:      "DLRM: the busiest second",
			o:         options{in: "testdata/dlrm.csv", at: "busiest", cpu: true, gpu: true, firstCN: -1, firstHN: -1},
			wantNames: []string{"instance-0", "instance-1", "instance-2"},
			wantIn:    []string{"memory: 960000Mi", "cpu: 64000m", `app: "app_1"`},
		},
		{
			name:      "DLRM: the first CN and no HN",
			o:         options{in: "testdata/dlrm.csv", cpu: true, gpu: true, firstCN: 1, firstHN: 0},
			wantNames: []string{"instance-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.namespace = "trace"
			var out bytes.Buffer
			if err := run(tt.o, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, doc := range strings.Split(out.String(), "---\n")[1:] {
				var pod struct {
					Kind     string
					Metadata struct{ Name string }
				}
				if err := yaml.Unmarshal([]byte(doc), &pod); err != nil {
					t.Fatalf("not YAML: %v\n%s", err, doc)
				}
				if pod.Kind != "Pod" {
					t.Errorf("kind %q, want Pod", pod.Kind)
				}
				names = append(names, pod.Metadata.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.wantNames, ",") {
				t.Errorf("pods %v, want %v", names, tt.wantNames)
			}
			for _, f := range tt.wantIn {
				if !strings.Contains(out.String(), f) {
					t.Errorf("output lacks %q:\n%s", f, out.String())
				}
			}
		})
	}
}

func TestConvertRefusesAnUnknownHeader(t *testing.T) {
	_, err := read(strings.NewReader("a,b\n1,2\n"))
	if err == nil || !strings.Contains(err.Error(), "unknown header") {
		t.Fatalf("err = %v, want an unknown header", err)
	}
}
