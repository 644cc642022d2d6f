package tui

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/launch"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/tui/watch"
)

// now is the fixed time of every test.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// recordingLauncher records launches instead of creating NodeClaims.
type recordingLauncher struct {
	mu   sync.Mutex
	reqs []launch.Request
}

func (l *recordingLauncher) Launch(_ context.Context, r launch.Request) (launch.Launched, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r)
	return launch.Launched{Claim: fmt.Sprintf("default-%d", len(l.reqs)), ClaimInCluster: true}, nil
}

func (l *recordingLauncher) Summary() string {
	return "This creates NodeClaims; the operator launches the instances."
}

func (l *recordingLauncher) requests() []launch.Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]launch.Request(nil), l.reqs...)
}

func node(name, typ string, cpu, mem string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("29"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour)), Labels: map[string]string{
			"node.kubernetes.io/instance-type": typ, "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "on-demand",
			"topology.kubernetes.io/region": "us-east-1", "kubernetes.io/hostname": name,
		}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func pod(name, owner, nodeName, cpu, mem string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour))},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, Controller: &yes}}
	}
	if nodeName == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/2 nodes are available: 2 Insufficient cpu.",
		}}}
	}
	return p
}

// cluster is two small nodes, a few running pods, three pending web pods
// that need a new node and one pod no instance type can hold.
func cluster() watch.Batch {
	var b watch.Batch
	add := func(k watch.Kind, key string, obj any) {
		b.Events = append(b.Events, watch.Event{Kind: k, Key: key, Obj: obj})
	}
	add(watch.Node, "node-a", node("node-a", "m5.large", "2", "8Gi"))
	add(watch.Node, "node-b", node("node-b", "m5.large", "2", "8Gi"))
	add(watch.Pod, "default/db-0", pod("db-0", "db", "node-a", "1500m", "4Gi"))
	add(watch.Pod, "default/db-1", pod("db-1", "db", "node-b", "1500m", "4Gi"))
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		add(watch.Pod, "default/"+name, pod(name, "web", "", "1", "2Gi"))
	}
	add(watch.Pod, "default/huge", pod("huge", "", "", "5000", "4Ti"))
	return b
}

// liveModel returns a model fed with cluster(), planned.
func liveModel(t testing.TB, opts Options) *Model {
	t.Helper()
	opts.Context = "test-ctx"
	opts.Catalog = plan.Catalog{Region: "us-east-1"}
	opts.Debounce = time.Millisecond
	opts.Now = func() time.Time { return now }
	m := New(opts)
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 30}, cluster(), watch.Synced{})
	if m.rep == nil {
		t.Fatalf("no report after sync; plan error: %v", m.planErr)
	}
	return m
}

// drive sends messages to the model and runs the commands they return,
// synchronously, feeding their messages back, as tea.Program would.
func drive(t testing.TB, m *Model, msgs ...tea.Msg) (quit bool) {
	t.Helper()
	queue := append([]tea.Msg(nil), msgs...)
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 1000 {
			t.Fatal("drive: too many messages")
		}
		msg := queue[0]
		queue = queue[1:]
		switch msg := msg.(type) {
		case nil:
			continue
		case tea.QuitMsg:
			quit = true
			continue
		case tea.BatchMsg:
			for _, c := range msg {
				if c != nil {
					queue = append(queue, c())
				}
			}
			continue
		}
		_, cmd := m.Update(msg)
		if cmd != nil {
			queue = append(queue, cmd())
		}
	}
	return quit
}

// keys turns "j", "enter", "space" ... into key presses.
func keys(names ...string) []tea.Msg {
	var out []tea.Msg
	for _, n := range names {
		switch n {
		case "enter":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEnter})
		case "esc":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEscape})
		case "tab":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyTab})
		case "space":
			out = append(out, tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
		case "backspace":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyBackspace})
		case "down":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyDown})
		case "ctrl+u":
			out = append(out, tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl})
		case "ctrl+c":
			out = append(out, tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
		default:
			for _, r := range n {
				out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
			}
		}
	}
	return out
}

func watchSynced() watch.Synced { return watch.Synced{} }
