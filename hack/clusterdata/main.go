// Command clusterdata converts Alibaba's public production pod traces
// (github.com/alibaba/clusterdata) into bare Pod manifests, so that the
// planner can be run and benchmarked on pods nobody here wrote. It reads a
// CSV file from a clusterdata checkout and writes YAML to stdout; the data
// itself is never committed (the repository permits research and study use
// and asks that its papers be cited, see README.md beside this file).
//
// Two traces are understood, recognised by their header:
//
//   - cluster-trace-gpu-v2023/csv/openb_pod_list_*.csv (name, cpu_milli,
//     memory_mib, num_gpu, gpu_milli, gpu_spec, …): one Pod per row. GPUs
//     become whole nvidia.com/gpu (a fractional share of one GPU still asks
//     for one); gpu_spec, a list of acceptable GPU models, becomes a required
//     node affinity on karpenter.k8s.aws/instance-gpu-name.
//   - cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv (instance_sn,
//     role, app_name, cpu_request, memory_request in GiB, gpu_request,
//     creation_time, deletion_time, …): one Pod per instance, labelled with
//     its app and role. -at busiest keeps the instances alive at the trace's
//     busiest second (an empty creation time is before the trace, an empty
//     deletion time after it).
//
// Usage:
//
//	go run ./hack/clusterdata -in $CLUSTERDATA/cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv -gpu=false >openb-cpu.yaml
//	go run ./hack/clusterdata -in $CLUSTERDATA/cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv -at busiest >dlrm-busiest.yaml
package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	var o options
	flag.StringVar(&o.in, "in", "", "the trace's CSV file (openb_pod_list_*.csv or disaggregated_DLRM_trace.csv)")
	flag.StringVar(&o.namespace, "namespace", "trace", "namespace of the Pods written")
	flag.BoolVar(&o.cpu, "cpu", true, "keep pods that ask for no GPU")
	flag.BoolVar(&o.gpu, "gpu", true, "keep pods that ask for GPUs")
	flag.StringVar(&o.at, "at", "", `DLRM only: keep the instances alive at this second of the trace, or "busiest"`)
	flag.IntVar(&o.firstCN, "first-cn", -1, "DLRM only: keep the first N CN (CPU node) instances (-1: all)")
	flag.IntVar(&o.firstHN, "first-hn", -1, "DLRM only: keep the first N HN (GPU node) instances (-1: all)")
	flag.Parse()
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "clusterdata:", err)
		os.Exit(1)
	}
}

type options struct {
	in, namespace, at string
	cpu, gpu          bool
	firstCN, firstHN  int
}

// pod is what a trace row says about one pod.
type pod struct {
	name     string
	labels   [][2]string
	milliCPU int64
	memMiB   int64
	gpus     int64
	gpuNames []string // acceptable karpenter.k8s.aws/instance-gpu-name values; empty: any
	role     string   // DLRM: CN or HN
	created  float64  // seconds from the trace's start; -Inf before it
	deleted  float64  // +Inf after its end
}

func run(o options, stdout, stderr io.Writer) error {
	if o.in == "" {
		return errors.New("-in is required: the path of a clusterdata CSV file")
	}
	f, err := os.Open(o.in)
	if err != nil {
		return err
	}
	defer f.Close()
	pods, err := read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", o.in, err)
	}
	pods, err = selectPods(pods, o)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	for i := range pods {
		writePod(w, o.namespace, &pods[i])
	}
	fmt.Fprintf(stderr, "clusterdata: %d pods from %s\n", len(pods), o.in)
	return w.Flush()
}

// read parses either trace, by its header.
func read(r io.Reader) ([]pod, error) {
	c := csv.NewReader(bufio.NewReader(r))
	c.ReuseRecord = true
	header, err := c.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	var parse func(rec []string) (pod, error)
	switch {
	case has(col, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_spec"):
		parse = func(rec []string) (pod, error) { return openbPod(col, rec) }
	case has(col, "instance_sn", "role", "app_name", "cpu_request", "memory_request", "gpu_request", "creation_time", "deletion_time"):
		parse = func(rec []string) (pod, error) { return dlrmPod(col, rec) }
	default:
		return nil, fmt.Errorf("unknown header %q: expected an openb_pod_list or disaggregated_DLRM_trace CSV", strings.Join(header, ","))
	}
	var out []pod
	for line := 2; ; line++ {
		rec, err := c.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		p, err := parse(rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, p)
	}
}

func has(col map[string]int, names ...string) bool {
	for _, n := range names {
		if _, ok := col[n]; !ok {
			return false
		}
	}
	return true
}

// gpuNames maps the trace's GPU models to the instance-gpu-name values of
// the AWS types that carry them. Models with no AWS counterpart (P100 and
// Alibaba's own G2, G3) keep their own lower-cased name, which no type has:
// such a pod is unplaceable on AWS, as it would be.
var gpuNames = map[string]string{
	"T4":      "t4",
	"V100M16": "v100",
	"V100M32": "v100",
	"A10":     "a10g",
	"A100":    "a100",
}

func openbPod(col map[string]int, rec []string) (pod, error) {
	p := pod{name: rec[col["name"]], created: math.Inf(-1), deleted: math.Inf(1)}
	var err error
	if p.milliCPU, err = integer(rec[col["cpu_milli"]], "cpu_milli"); err != nil {
		return p, err
	}
	if p.memMiB, err = integer(rec[col["memory_mib"]], "memory_mib"); err != nil {
		return p, err
	}
	if p.gpus, err = integer(rec[col["num_gpu"]], "num_gpu"); err != nil {
		return p, err
	}
	if spec := strings.TrimSpace(rec[col["gpu_spec"]]); spec != "" && p.gpus > 0 {
		seen := map[string]bool{}
		for _, m := range strings.Split(spec, "|") {
			n, ok := gpuNames[m]
			if !ok {
				n = strings.ToLower(m)
			}
			if !seen[n] {
				seen[n] = true
				p.gpuNames = append(p.gpuNames, n)
			}
		}
		sort.Strings(p.gpuNames)
	}
	if i, ok := col["creation_time"]; ok {
		if p.created, err = seconds(rec[i], math.Inf(-1)); err != nil {
			return p, fmt.Errorf("creation_time: %w", err)
		}
	}
	if i, ok := col["deletion_time"]; ok {
		if p.deleted, err = seconds(rec[i], math.Inf(1)); err != nil {
			return p, fmt.Errorf("deletion_time: %w", err)
		}
	}
	return p, nil
}

func dlrmPod(col map[string]int, rec []string) (pod, error) {
	p := pod{name: rec[col["instance_sn"]], role: rec[col["role"]]}
	p.labels = [][2]string{{"app", rec[col["app_name"]]}, {"role", p.role}}
	cpu, err := strconv.ParseFloat(rec[col["cpu_request"]], 64)
	if err != nil || cpu < 0 {
		return p, fmt.Errorf("cpu_request %q: not a number of cores", rec[col["cpu_request"]])
	}
	p.milliCPU = int64(math.Round(cpu * 1000))
	mem, err := strconv.ParseFloat(rec[col["memory_request"]], 64)
	if err != nil || mem < 0 {
		return p, fmt.Errorf("memory_request %q: not a number of GiB", rec[col["memory_request"]])
	}
	p.memMiB = int64(math.Round(mem * 1024))
	if p.gpus, err = integer(rec[col["gpu_request"]], "gpu_request"); err != nil {
		return p, err
	}
	if p.created, err = seconds(rec[col["creation_time"]], math.Inf(-1)); err != nil {
		return p, fmt.Errorf("creation_time: %w", err)
	}
	if p.deleted, err = seconds(rec[col["deletion_time"]], math.Inf(1)); err != nil {
		return p, fmt.Errorf("deletion_time: %w", err)
	}
	return p, nil
}

func integer(s, what string) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s %q: not a whole number", what, s)
	}
	return v, nil
}

// seconds parses a trace time; empty or NaN means before the trace's start
// or after its end, given as open.
func seconds(s string, open float64) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "nan") {
		return open, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of seconds", s)
	}
	return v, nil
}

// selectPods keeps the pods o asks for, in the trace's order.
func selectPods(pods []pod, o options) ([]pod, error) {
	if o.at != "" {
		t, err := instant(pods, o.at)
		if err != nil {
			return nil, err
		}
		pods = alive(pods, t)
	}
	cn, hn := o.firstCN, o.firstHN
	var out []pod
	for _, p := range pods {
		if (p.gpus == 0 && !o.cpu) || (p.gpus > 0 && !o.gpu) {
			continue
		}
		switch p.role {
		case "CN":
			if cn == 0 {
				continue
			}
			cn--
		case "HN":
			if hn == 0 {
				continue
			}
			hn--
		}
		out = append(out, p)
	}
	return out, nil
}

// instant is the second -at names: a number, or "busiest", the first second
// at which the most pods are alive.
func instant(pods []pod, at string) (float64, error) {
	if at != "busiest" {
		t, err := strconv.ParseFloat(at, 64)
		if err != nil {
			return 0, fmt.Errorf(`-at %q: a second of the trace or "busiest"`, at)
		}
		return t, nil
	}
	type event struct {
		t     float64
		delta int
	}
	events := make([]event, 0, 2*len(pods))
	for _, p := range pods {
		events = append(events, event{p.created, 1}, event{p.deleted, -1})
	}
	// Deletions before creations at the same second: a pod deleted at t is
	// not alive at t.
	sort.Slice(events, func(i, j int) bool {
		if events[i].t != events[j].t {
			return events[i].t < events[j].t
		}
		return events[i].delta < events[j].delta
	})
	best, n, bestT := -1, 0, 0.0
	for _, e := range events {
		n += e.delta
		if n > best && !math.IsInf(e.t, 0) {
			best, bestT = n, e.t
		}
	}
	return bestT, nil
}

// alive keeps the pods created at or before t and deleted after it.
func alive(pods []pod, t float64) []pod {
	var out []pod
	for _, p := range pods {
		if p.created <= t && t < p.deleted {
			out = append(out, p)
		}
	}
	return out
}

// writePod writes one Pod document.
func writePod(w io.Writer, namespace string, p *pod) {
	name := strings.ToLower(strings.ReplaceAll(p.name, "_", "-"))
	fmt.Fprintf(w, "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n", name, namespace)
	if len(p.labels) > 0 {
		fmt.Fprintf(w, "  labels:\n")
		for _, l := range p.labels {
			fmt.Fprintf(w, "    %s: %q\n", l[0], l[1])
		}
	}
	fmt.Fprintf(w, "spec:\n")
	if len(p.gpuNames) > 0 {
		fmt.Fprintf(w, "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n")
		fmt.Fprintf(w, "        - matchExpressions:\n          - key: karpenter.k8s.aws/instance-gpu-name\n            operator: In\n            values: [%s]\n", quoteAll(p.gpuNames))
	}
	fmt.Fprintf(w, "  containers:\n  - name: app\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests:\n")
	fmt.Fprintf(w, "        cpu: %dm\n        memory: %dMi\n", p.milliCPU, p.memMiB)
	if p.gpus > 0 {
		fmt.Fprintf(w, "        nvidia.com/gpu: %d\n      limits:\n        nvidia.com/gpu: %d\n", p.gpus, p.gpus)
	}
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
