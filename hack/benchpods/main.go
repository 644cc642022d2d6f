// Command benchpods writes a solver benchmark suite's pods as bare Pod
// manifests, so that the whole CLI can be timed on the input the solver
// alone is benchmarked on. Only what the suite gives the solver is written:
// names, labels, requests, the controller, topology spread, pod affinity
// and pod anti-affinity. Suite h uses a pool with no requirements, spot and
// on-demand; plan it with
//
//	go run ./hack/benchpods -pods 50000 >h50k.yaml
//	kubectl-rightsize explain -f h50k.yaml --all-instance-types --arch amd64,arm64 \
//	  --capacity-type spot,on-demand --no-eks-daemonsets -o json
//
// Karpenter's mix (-suite karpenter, seed 42 as its benchmark) is written as
// a user's files without a NodePool: the default pool and the EKS
// DaemonSets apply.
//
//	go run ./hack/benchpods -suite karpenter -pods 5000 -seed 42 >mix.yaml
//	kubectl-rightsize explain -f mix.yaml -o json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

func main() {
	suite := flag.String("suite", "h", "the suite: h (heterogeneous) or karpenter (Karpenter's mix)")
	pods := flag.Int("pods", 50000, "number of pods")
	seed := flag.Uint64("seed", 1, "the suite's seed")
	flag.Parse()
	var p *solver.Problem
	switch *suite {
	case "h":
		var err error
		if p, err = bench.Heterogeneous(*pods, *seed); err != nil {
			fmt.Fprintln(os.Stderr, "benchpods:", err)
			os.Exit(1)
		}
	case "karpenter":
		p = bench.KarpenterMix(*pods, int64(*seed)) //nolint:gosec // a seed, not a size
	default:
		fmt.Fprintf(os.Stderr, "benchpods: unknown suite %q; use h or karpenter\n", *suite)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	for i := range p.Pods {
		writePod(w, &p.Pods[i])
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "benchpods:", err)
		os.Exit(1)
	}
}

// writePod writes one Pod document. Strings are quoted so that values
// such as "t0" or "a" stay strings.
func writePod(w io.Writer, p *solver.Pod) {
	fmt.Fprintf(w, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n", p.Name, p.Namespace)
	writeLabels(w, "  labels:\n", "    ", p.Labels)
	if kind, name, ok := strings.Cut(p.Owner, "/"); ok && p.Controller {
		// The owner's name made a valid object name as the pods' are.
		name = strings.NewReplacer("/", "-", ".", "-").Replace(name)
		fmt.Fprintf(w, "  ownerReferences:\n  - apiVersion: apps/v1\n    kind: %s\n    name: %s\n    uid: %s\n    controller: true\n", kind, name, name)
	}
	fmt.Fprintf(w, "spec:\n  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests:\n")
	fmt.Fprintf(w, "        cpu: %dm\n        memory: %q\n", p.Requests[solver.CPU], strconv.FormatInt(p.Requests[solver.Memory], 10))
	if len(p.Spread) > 0 {
		fmt.Fprintf(w, "  topologySpreadConstraints:\n")
		for _, sp := range p.Spread {
			fmt.Fprintf(w, "  - maxSkew: %d\n    topologyKey: %s\n    whenUnsatisfiable: %s\n    labelSelector:\n", sp.MaxSkew, sp.TopologyKey, sp.WhenUnsatisfiable)
			writeLabels(w, "      matchLabels:\n", "        ", sp.Selector.MatchLabels)
		}
	}
	if len(p.PodAffinity)+len(p.PodAntiAffinity) > 0 {
		fmt.Fprintf(w, "  affinity:\n")
	}
	writeTerms(w, "    podAffinity:\n", p.PodAffinity)
	writeTerms(w, "    podAntiAffinity:\n", p.PodAntiAffinity)
}

func writeTerms(w io.Writer, head string, terms []solver.PodAffinityTerm) {
	if len(terms) == 0 {
		return
	}
	io.WriteString(w, head)
	io.WriteString(w, "      requiredDuringSchedulingIgnoredDuringExecution:\n")
	for _, t := range terms {
		fmt.Fprintf(w, "      - topologyKey: %s\n        labelSelector:\n", t.TopologyKey)
		writeLabels(w, "          matchLabels:\n", "            ", t.Selector.MatchLabels)
	}
}

func writeLabels(w io.Writer, head, indent string, labels map[string]string) {
	if len(labels) == 0 {
		return
	}
	io.WriteString(w, head)
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(w, "%s%s: %q\n", indent, k, labels[k])
	}
}
