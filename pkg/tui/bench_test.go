package tui

import (
	"fmt"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// bigCluster is 1,000 nodes running 9,500 pods of 500 StatefulSets, and 500
// pending pods of 50 more.
func bigCluster() watch.Batch {
	var b watch.Batch
	add := func(k watch.Kind, key string, obj any) {
		b.Events = append(b.Events, watch.Event{Kind: k, Key: key, Obj: obj})
	}
	types := []struct{ name, cpu, mem string }{{"m5.xlarge", "4", "16Gi"}, {"m5.xlarge", "4", "16Gi"}, {"r5.xlarge", "4", "32Gi"}}
	for i := range 1000 {
		t := types[i%len(types)]
		name := fmt.Sprintf("node-%04d", i)
		n := node(name, t.name, t.cpu, t.mem)
		n.Status.Capacity["pods"], n.Status.Allocatable["pods"] = n.Status.Capacity["pods"], n.Status.Allocatable["pods"]
		add(watch.Node, name, n)
	}
	for i := range 9500 {
		name := fmt.Sprintf("svc%03d-%d", i%500, i/500)
		add(watch.Pod, "default/"+name, pod(name, fmt.Sprintf("svc%03d", i%500), fmt.Sprintf("node-%04d", i%1000), "380m", "1400Mi"))
	}
	for i := range 500 {
		name := fmt.Sprintf("batch%02d-%d", i%50, i/50)
		add(watch.Pod, "default/"+name, pod(name, fmt.Sprintf("batch%02d", i%50), "", "1500m", "3Gi"))
	}
	return b
}

// BenchmarkKeyPress measures what one key press costs the UI goroutine
// with 10,000 pods and 1,000 nodes: Update and View (Render) for moves,
// view switches, a filter and the detail. It reports the re-plan time of
// the same cluster too; that runs off the UI goroutine.
func BenchmarkKeyPress(b *testing.B) {
	opts := Options{Context: "bench", Catalog: plan.Catalog{Region: "us-east-1"}, Debounce: time.Millisecond, Now: func() time.Time { return now }, Launcher: &recordingLauncher{}}
	m := New(opts)
	start := time.Now()
	drive(b, m, tea.WindowSizeMsg{Width: 160, Height: 50}, bigCluster(), watch.Synced{})
	if m.rep == nil {
		b.Fatalf("no report: %v", m.planErr)
	}
	plan := time.Since(start)
	b.Logf("10,000 pods, 1,000 nodes: first plan %v (solve+consolidate %v), %d pending groups, %d proposed, %d node rows",
		plan, m.rep.Took, len(m.rep.Pending), len(m.rep.Proposed), len(m.rep.Nodes))
	presses := keys("3", "j", "j", "k", "G", "g", "s", "S", "2", "j", "4", "j", "1", "j", "enter", "j", "esc", "tab", "/", "node-09", "esc")
	worst := time.Duration(0)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		m.Update(presses[i%len(presses)])
		_ = m.View()
		if d := time.Since(t0); d > worst {
			worst = d
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/key")
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms/key")
	b.ReportMetric(plan.Seconds()*1000, "replan-ms")
}
