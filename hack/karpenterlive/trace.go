package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The production trace: Alibaba's cluster-trace-gpu-v2023,
// openb_pod_list_default.csv (github.com/alibaba/clusterdata): 8,152 pods
// of a GPU cluster with their CPU, memory and GPU requests and creation
// and deletion times in seconds. The data is not in this repository (its
// README permits research and study use); its authors ask that their
// paper be cited:
//
//	Qizhen Weng, Lingyun Yang, Yinghao Yu, Wei Wang, Xiaochuan Tang,
//	Guodong Yang, Liping Zhang. "Beware of Fragmentation: Scheduling
//	GPU-Sharing Workloads with Fragmentation Gradient Descent". 2023
//	USENIX Annual Technical Conference (USENIX ATC '23).

// tracePod is one row of the trace.
type tracePod struct {
	Name             string
	CPUMilli, MemMiB int64
	GPUs             int64
	Created, Deleted int64 // seconds, trace time
}

// traceColumns are the columns the converter reads (the file has more).
var traceColumns = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "creation_time", "deletion_time"}

// readTrace parses the pod list CSV; errors name the file and line.
func readTrace(path string) ([]tracePod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	return parseTrace(path, f)
}

func parseTrace(path string, r io.Reader) ([]tracePod, error) {
	cr := csv.NewReader(r)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range traceColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no %q column (want %s)", path, c, strings.Join(traceColumns, ", "))
		}
	}
	var pods []tracePod
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		num := func(name string) (int64, error) {
			s := strings.TrimSpace(rec[col[name]])
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%s:%d: %s %q is not a non-negative integer", path, line, name, s)
			}
			return v, nil
		}
		p := tracePod{Name: rec[col["name"]]}
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"cpu_milli", &p.CPUMilli}, {"memory_mib", &p.MemMiB}, {"num_gpu", &p.GPUs}, {"creation_time", &p.Created}, {"deletion_time", &p.Deleted}} {
			if *f.dst, err = num(f.name); err != nil {
				return nil, err
			}
		}
		if p.Deleted < p.Created {
			return nil, fmt.Errorf("%s:%d: pod %s is deleted (%d) before it is created (%d)", path, line, p.Name, p.Deleted, p.Created)
		}
		if p.CPUMilli == 0 && p.MemMiB == 0 {
			return nil, fmt.Errorf("%s:%d: pod %s requests no CPU and no memory", path, line, p.Name)
		}
		pods = append(pods, p)
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%s: no pods", path)
	}
	return pods, nil
}

// traceEvent is one pod created or deleted at an offset from the start of
// the replay.
type traceEvent struct {
	At     time.Duration
	Pod    int // index into the pods
	Create bool
}

// compress maps the trace onto a replay of length window: it keeps every
// every-th pod; the time axis from the 1st percentile of the kept pods'
// creation times (the trace starts with a few pods months before the rest)
// to the last deletion is scaled linearly onto window, earlier pods being
// created at once; and each pod lives at least minLife (a pod of a few
// minutes in the trace would otherwise live well under a second, less
// than a node takes to come up). It returns the kept pods and their
// events in time order.
func compress(pods []tracePod, window, minLife time.Duration, every int) ([]tracePod, []traceEvent) {
	var kept []tracePod
	for i, p := range pods {
		if i%max(every, 1) == 0 {
			kept = append(kept, p)
		}
	}
	created := make([]int64, len(kept))
	var end int64
	for i, p := range kept {
		created[i] = p.Created
		end = max(end, p.Deleted)
	}
	slices.Sort(created)
	start := created[len(created)/100]
	span := float64(max(end-start, 1))
	at := func(t int64) time.Duration {
		return time.Duration(math.Max(0, float64(t-start)) / span * float64(window))
	}
	var evs []traceEvent
	for i, p := range kept {
		c := at(p.Created)
		d := max(at(p.Deleted), c+minLife)
		evs = append(evs, traceEvent{At: c, Pod: i, Create: true}, traceEvent{At: d, Pod: i})
	}
	slices.SortStableFunc(evs, func(a, b traceEvent) int {
		if a.At != b.At {
			return int(a.At - b.At)
		}
		if a.Create != b.Create { // deletions first at the same instant
			if a.Create {
				return 1
			}
			return -1
		}
		return a.Pod - b.Pod
	})
	return kept, evs
}

// syntheticTrace writes n pods with the trace's columns into path, for
// `make test` (the real trace is not in the repository): a mix shaped like
// openb's — most pods one GPU, some CPU-only, a few with 2-4 GPUs —
// created over an hour of trace time, each living 5-30 minutes.
func syntheticTrace(path string, n int) error {
	var b strings.Builder
	b.WriteString("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n")
	for i := range n {
		cpu, mem, gpu := int64(4000), int64(16384), int64(1)
		switch {
		case i%5 == 0:
			cpu, mem, gpu = 2000+int64(i%4)*1000, 4096+int64(i%3)*2048, 0
		case i%17 == 0:
			cpu, mem, gpu = 16000, 65536, 4
		case i%7 == 0:
			cpu, mem, gpu = 8000, 32768, 2
		}
		created := int64(i) * 3600 / int64(n)
		deleted := created + 300 + int64(i*7919%1500)
		fmt.Fprintf(&b, "synthetic-%04d,%d,%d,%d,1000,,LS,Running,%d,%d,%d\n", i, cpu, mem, gpu, created, deleted, created)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
