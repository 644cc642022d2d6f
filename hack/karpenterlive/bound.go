package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// packedBound is what no system could beat on a workload: at each
// sampled instant the objects alive then (by the workload's own clock:
// the trace's pods, the Deployments' replicas) planned from scratch by
// `explain -f`, as if every node could be replaced at once and came up in
// no time, integrated over the run. LowerBound integrates the solver's
// lower bound (no plan of those pods costs less), Plan our plan of them.
type packedBound struct {
	LowerBound float64 `json:"lowerBoundCostHours"`
	Plan       float64 `json:"planCostHours"`
	Samples    int     `json:"samples"`
	Every      string  `json:"every"`
}

// aliveFunc returns the manifests (YAML documents) of what a workload has
// alive at an offset from its start; none costs nothing.
type aliveFunc func(at time.Duration) ([]string, error)

// boundOf samples alive every step from the start to end and plans each
// instant with the binary bin on the shared catalog (typesFile) and the
// bench's pools.
func boundOf(ctx context.Context, bin, typesFile, dir string, pools []poolSpec, end, step time.Duration, alive aliveFunc) (packedBound, error) {
	b := packedBound{Every: step.String()}
	var head []string
	for _, p := range pools {
		head = append(head, poolYAML("rightsize.dev/v1alpha1", "rightsize.dev", "SimNodeClass", "sim", p))
	}
	file := filepath.Join(dir, "bound-instant.yaml")
	for at := time.Duration(0); at < end; at += step {
		b.Samples++
		docs, err := alive(at)
		if err != nil {
			return b, err
		}
		if len(docs) == 0 {
			continue
		}
		if err := os.WriteFile(file, []byte(strings.Join(append(append([]string(nil), head...), docs...), "---\n")), 0o644); err != nil {
			return b, err
		}
		plan, lb, err := explainPrices(ctx, bin, typesFile, file)
		if err != nil {
			return b, fmt.Errorf("bound at %s of the run: %w", at, err)
		}
		hours := min(step, end-at).Hours()
		b.Plan += plan * hours
		b.LowerBound += lb * hours
	}
	return b, nil
}

// traceAlive is the replay's pods alive at an offset: events are walked
// forward, so offsets must not decrease.
func traceAlive(pods []tracePod, evs []traceEvent) aliveFunc {
	live := map[int]bool{}
	next := 0
	return func(at time.Duration) ([]string, error) {
		for ; next < len(evs) && evs[next].At <= at; next++ {
			if evs[next].Create {
				live[evs[next].Pod] = true
			} else {
				delete(live, evs[next].Pod)
			}
		}
		var docs []string
		for i := range pods {
			if live[i] {
				doc, err := tracePodYAML(i, pods[i])
				if err != nil {
					return nil, err
				}
				docs = append(docs, doc)
			}
		}
		return docs, nil
	}
}

// deploymentsAlive is shapes' Deployments with the replicas replicas(s, at)
// gives.
func deploymentsAlive(shapes []shape, replicas func(s shape, at time.Duration) int32) aliveFunc {
	return func(at time.Duration) ([]string, error) {
		var docs []string
		for _, s := range shapes {
			r := replicas(s, at)
			if r == 0 {
				continue
			}
			d := deployment("bench", s, r)
			d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
			out, err := yaml.Marshal(d)
			if err != nil {
				return nil, err
			}
			docs = append(docs, string(out))
		}
		return docs, nil
	}
}

// tracePodYAML is the replay's pod i as a manifest, as the trace
// workload creates it (without its planned life, which no plan reads).
func tracePodYAML(i int, p tracePod) (string, error) {
	out, err := yaml.Marshal(tracePodObject("bench", i, p, 0))
	return string(out), err
}

// explainPrices runs `bin explain -f file -o json` on the catalog and
// returns the plan's price and lower bound, $/h. Pods the plan leaves
// pending are an error: the bound would then leave them out.
func explainPrices(ctx context.Context, bin, typesFile, file string) (plan, lb float64, err error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "explain", "-f", file, "--instance-types", typesFile, "--timeout", "60s", "-o", "json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s explain: %w: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	var got struct {
		Total         float64           `json:"totalPricePerHour"`
		LowerBound    float64           `json:"lowerBoundPricePerHour"`
		Unschedulable []json.RawMessage `json:"unschedulable"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		return 0, 0, fmt.Errorf("%s explain -o json: %w", bin, err)
	}
	if n := len(got.Unschedulable); n > 0 {
		return 0, 0, fmt.Errorf("%s explain leaves %d pods pending", bin, n)
	}
	return got.Total, got.LowerBound, nil
}
