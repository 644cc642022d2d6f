package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBothSystemsReadTheSameCatalog writes the shared subset for both
// systems and reads it back with each one's own reader: same types,
// offerings, prices, capacity and allocatable; and a price changed in
// Karpenter's file is caught.
func TestBothSystemsReadTheSameCatalog(t *testing.T) {
	sc, err := newSharedCatalog()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ours, karp, err := sc.writeFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	n, err := checkFiles(ours, karp)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d instance types, both readers agree", n)
	if n != len(sc.Types) || n < 40 {
		t.Errorf("checked %d types, the subset has %d (want at least 40)", n, len(sc.Types))
	}
	if p, ok := sc.Price("m6i.large", "us-east-1a", "on-demand"); !ok || p <= 0 {
		t.Errorf("m6i.large on-demand in us-east-1a: $%g/h, found %t", p, ok)
	}
	data, err := os.ReadFile(karp)
	if err != nil {
		t.Fatal(err)
	}
	// Nudge the first price of Karpenter's file.
	s := string(data)
	i := strings.Index(s, `"Price": `) + len(`"Price": `)
	if err := os.WriteFile(karp, []byte(s[:i]+"9"+s[i:]), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkFiles(ours, karp); err == nil || !strings.Contains(err.Error(), "offering") {
		t.Errorf("a changed price: got %v, want an error naming the offering", err)
	}
}

// TestTraceParseAndCompress reads a synthetic trace and checks the
// compression: every pod created and deleted once, within the window
// plus the minimum lifetime, each living at least that long.
func TestTraceParseAndCompress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := syntheticTrace(path, 120); err != nil {
		t.Fatal(err)
	}
	pods, err := readTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	kept, evs := compress(pods, 2*time.Minute, 30*time.Second, 2)
	if len(kept) != 60 || len(evs) != 120 {
		t.Fatalf("kept %d pods, %d events; want 60 and 120", len(kept), len(evs))
	}
	created := map[int]time.Duration{}
	for i, ev := range evs {
		if i > 0 && ev.At < evs[i-1].At {
			t.Fatalf("event %d at %s before the one before it (%s)", i, ev.At, evs[i-1].At)
		}
		if ev.Create {
			created[ev.Pod] = ev.At
		} else if life := ev.At - created[ev.Pod]; life < 30*time.Second {
			t.Errorf("pod %d lives %s, want at least 30s", ev.Pod, life)
		}
		if ev.At > 2*time.Minute+30*time.Second {
			t.Errorf("event at %s, after the window and the minimum lifetime", ev.At)
		}
	}
}

// TestTraceErrors: bad input is a one-line error naming file and line.
func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct{ name, csv, want string }{
		{"missing column", "name,cpu_milli\nx,1\n", `no "memory_mib" column`},
		{"bad number", "name,cpu_milli,memory_mib,num_gpu,creation_time,deletion_time\nx,abc,1,0,0,1\n", `t.csv:2: cpu_milli "abc"`},
		{"deleted first", "name,cpu_milli,memory_mib,num_gpu,creation_time,deletion_time\nx,1,1,0,5,1\n", "deleted (1) before it is created (5)"},
		{"no pods", "name,cpu_milli,memory_mib,num_gpu,creation_time,deletion_time\n", "no pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTrace("t.csv", strings.NewReader(tc.csv))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestLiveSideBySide is the ≤200-pod version of `make bench-live`: a
// small ramp (about 100 pods of TestLiveEqualsPlan's shapes, then a
// quarter of them) run on Karpenter's kwok controller and on our
// operator, both planes at once to keep it short. It asserts the harness
// measured both systems — nodes launched and priced, pods Running,
// controller CPU time — not who wins.
func TestLiveSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes and builds Karpenter; not in -short")
	}
	cfg, err := parseFlags([]string{"-workloads", "ramp", "-scale", "0.05", "-ramp-up", "75s", "-ramp-down", "30s", "-parallel"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runBench(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Workloads) != 1 || len(rep.Workloads[0].Rows) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, b := range rep.Builds {
		t.Logf("build %s: %.1f s wall, %.1f s CPU", b.Name, b.WallSeconds, b.CPUSeconds)
	}
	w := rep.Workloads[0]
	for _, r := range w.Rows {
		if r.NodesCreated == 0 || r.CostHours <= 0 || r.PeakNodes == 0 {
			t.Errorf("%s: %d nodes created, peak %d, cost-hours %.4f: want nodes launched and priced", r.System, r.NodesCreated, r.PeakNodes, r.CostHours)
		}
		if r.Pods < 90 || r.PodsRan < r.Pods*9/10 {
			t.Errorf("%s: %d of %d pods ran: want at least 90 %%", r.System, r.PodsRan, r.Pods)
		}
		if r.PendingP95 <= 0 || r.PendingMax < r.PendingP95 {
			t.Errorf("%s: pending p95 %.1f s, max %.1f s: want measured", r.System, r.PendingP95, r.PendingMax)
		}
		if r.ControllerCPU <= 0 || r.ControllerRSSMB <= 0 {
			t.Errorf("%s: controller CPU %.2f s, RSS %.0f MiB: want measured", r.System, r.ControllerCPU, r.ControllerRSSMB)
		}
		if r.SchedulerCPU <= 0 || r.APIServerCPU <= 0 {
			t.Errorf("%s: kube-scheduler CPU %.2f s, kube-apiserver %.2f s: want measured", r.System, r.SchedulerCPU, r.APIServerCPU)
		}
	}
	if b := w.Bound; b == nil || b.LowerBound <= 0 || b.Plan < b.LowerBound*0.999 {
		t.Errorf("packed from scratch: %+v: want 0 < lower bound <= plan", b)
	} else {
		t.Log(w.boundLine())
	}
	line := w.line()
	if !strings.HasPrefix(line, "bench-live ramp: cost-hours ours/karpenter ") {
		t.Errorf("summary line %q", line)
	}
	t.Log(line)
}

// TestTraceBoundOnly computes the packed-from-scratch bound of a small
// synthetic trace without running either system: every sample is
// planned by our binary, the bound is positive and no more than the
// plan, and the report has no measured rows.
func TestTraceBoundOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin; not in -short")
	}
	cfg, err := parseFlags([]string{"-workloads", "trace", "-bound-only", "-synthetic", "40",
		"-trace-window", "2m", "-trace-min-life", "30s", "-trace-tail", "30s", "-bound-every", "20s"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := runBench(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Workloads) != 1 || len(rep.Workloads[0].Rows) != 0 || rep.Workloads[0].Bound == nil {
		t.Fatalf("report: %+v", rep)
	}
	if len(rep.Builds) != 1 {
		t.Errorf("builds %+v: want only our binary built", rep.Builds)
	}
	b := rep.Workloads[0].Bound
	// The replay's last event is at most window + min life; 20 s samples.
	if b.Samples < 8 || b.Samples > 9 {
		t.Errorf("%d samples over a 2m30s-3m replay every 20 s", b.Samples)
	}
	if b.LowerBound <= 0 || b.Plan < b.LowerBound*0.999 {
		t.Errorf("lower bound $%.4f, plan $%.4f cost-hours: want 0 < bound <= plan", b.LowerBound, b.Plan)
	}
	lines := rep.lines()
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "bench-live trace packed from scratch every 20s: lower bound $") {
		t.Errorf("lines %q", lines)
	}
	t.Log(lines[0])
}

// TestEvictionsCutWorkShort checks the work a disruption ends early: an
// evicted trace pod counts the time from its eviction to its planned end
// (times its GPUs); a pod deleted by the replay at its end, an evicted pod
// without a planned life and one evicted after its planned end count
// nothing.
func TestEvictionsCutWorkShort(t *testing.T) {
	created := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name             string
		life             string // annotation; "" for none
		gpus             int64
		deletedAfter     time.Duration
		evicted          bool
		wantPod, wantGPU float64
	}{
		{"evicted half an hour early, 2 GPUs", "3600", 2, 30 * time.Minute, true, 0.5, 1},
		{"evicted, CPU only", "1800", 0, 6 * time.Minute, true, 0.4, 0},
		{"deleted by the replay at its end", "3600", 1, time.Hour, false, 0, 0},
		{"evicted, no planned life", "", 1, time.Minute, true, 0, 0},
		{"evicted after its planned end", "60", 1, 2 * time.Minute, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder(nil)
			pod := tracePodObject("ns", 0, tracePod{Name: "p", CPUMilli: 1000, MemMiB: 1024, GPUs: tt.gpus}, 0)
			pod.UID, pod.CreationTimestamp = "uid", metav1.NewTime(created)
			if tt.life != "" {
				pod.Annotations[lifeAnnotation] = tt.life
			}
			r.pod(pod, false)
			if tt.evicted {
				pod = pod.DeepCopy()
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
			}
			r.now = func() time.Time { return created.Add(tt.deletedAfter) }
			r.pod(pod, true)
			res := r.result(systemOurs, "trace", created, created.Add(2*time.Hour))
			if math.Abs(res.PodHoursCut-tt.wantPod) > 1e-9 || math.Abs(res.GPUHoursCut-tt.wantGPU) > 1e-9 {
				t.Errorf("cut short %.4f pod-h, %.4f GPU-h; want %.4f, %.4f", res.PodHoursCut, res.GPUHoursCut, tt.wantPod, tt.wantGPU)
			}
		})
	}
}
