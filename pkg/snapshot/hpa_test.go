package snapshot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestAutoscalersSetReplicas(t *testing.T) {
	deploy := func(name string, replicas int) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: " + name + "}\nspec:\n  replicas: " + string(rune('0'+replicas)) +
			"\n  selector: {matchLabels: {app: " + name + "}}\n  template: {metadata: {labels: {app: " + name + "}}, spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}}\n---\n"
	}
	hpa := func(apiVersion, target, extra string) string {
		return "apiVersion: " + apiVersion + "\nkind: HorizontalPodAutoscaler\nmetadata: {name: " + target + "}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: " + target + "}\n" + extra + "---\n"
	}
	tests := []struct {
		name    string
		in      string
		pods    []string
		warning string
	}{
		{"minReplicas raises", deploy("web", 1) + hpa("autoscaling/v2", "web", "  minReplicas: 3\n  maxReplicas: 10\n  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]\n"),
			[]string{"web-0", "web-1", "web-2"}, `HorizontalPodAutoscaler "web" raises Deployment/web from 1 to 3 replicas (minReplicas)`},
		{"autoscaler before its target", hpa("autoscaling/v1", "web", "  minReplicas: 2\n  maxReplicas: 4\n  targetCPUUtilizationPercentage: 80\n") + deploy("web", 1),
			[]string{"web-0", "web-1"}, "raises Deployment/web from 1 to 2"},
		{"maxReplicas lowers", deploy("web", 5) + hpa("autoscaling/v2", "web", "  maxReplicas: 2\n"),
			[]string{"web-0", "web-1"}, "lowers Deployment/web from 5 to 2 replicas (maxReplicas)"},
		{"within bounds is left alone", deploy("web", 2) + hpa("autoscaling/v2", "web", "  minReplicas: 1\n  maxReplicas: 3\n"),
			[]string{"web-0", "web-1"}, ""},
		{"target missing", deploy("api", 1) + hpa("autoscaling/v2", "web", "  maxReplicas: 3\n"),
			[]string{"api-0"}, "its target Deployment/web has no pods in the input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "app.yaml")
			if err := os.WriteFile(in, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Read([]string{in}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range m.Pods {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, tt.pods) {
				t.Errorf("pods %v, want %v", names, tt.pods)
			}
			found := false
			for _, w := range m.Warnings {
				found = found || (tt.warning != "" && strings.Contains(w, tt.warning))
			}
			if tt.warning != "" && !found {
				t.Errorf("warnings %q lack %q", m.Warnings, tt.warning)
			}
			if tt.warning == "" && len(m.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", m.Warnings)
			}
			if len(m.Pods) > 1 {
				m.Pods[0].Labels["x"] = "y"
				if m.Pods[1].Labels["x"] == "y" {
					t.Error("pods share their labels map")
				}
			}
		})
	}
}

func TestAutoscalerBadBounds(t *testing.T) {
	in := "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec: {scaleTargetRef: {kind: Deployment, name: web}, minReplicas: 5, maxReplicas: 2}\n"
	err := Decode("in.yaml", []byte(in), &Manifests{})
	if err == nil || !strings.Contains(err.Error(), `HorizontalPodAutoscaler "web": spec.minReplicas 5 must be at least 1 and at most spec.maxReplicas 2`) {
		t.Errorf("error %v", err)
	}
}
