package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cmd/explaincmd"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

const (
	benchNodes   = 500
	benchPods    = 5000
	benchPending = 100 // of benchPods, not bound to a node
)

// BenchmarkExplainLive reads 5,000 pods and 500 nodes from the plane, plans
// and prints, in process (read-s, total-s per run) and through the built
// binary once (cli-s). The nodes carry no kwok annotation: nothing runs
// them, so the plane stays quiet while it is measured; the bound pods are
// created with spec.nodeName set and tolerate the nodes' NoExecute taints.
func BenchmarkExplainLive(b *testing.B) {
	env := testenv.Start(b)
	setup := time.Now()
	populate(b, env)
	b.Logf("created %d nodes and %d pods in %s", benchNodes, benchPods, time.Since(setup).Round(time.Millisecond))

	config := genericclioptions.NewConfigFlags(false)
	config.KubeConfig = &env.Kubeconfig
	cfg, err := config.ToRESTConfig()
	if err != nil {
		b.Fatal(err)
	}
	var read, total time.Duration
	var out bytes.Buffer
	for b.Loop() {
		start := time.Now()
		clients, err := snapshot.NewClusterClients(cfg)
		if err != nil {
			b.Fatal(err)
		}
		cl, err := snapshot.ReadCluster(context.Background(), clients, snapshot.ClusterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		read += time.Since(start)
		if len(cl.Nodes) != benchNodes || len(cl.Scheduled) != benchPods-benchPending || len(cl.Pending) != benchPending {
			b.Fatalf("read %d nodes, %d bound and %d pending pods", len(cl.Nodes), len(cl.Scheduled), len(cl.Pending))
		}

		start = time.Now()
		out.Reset()
		o := &explaincmd.ExplainOptions{Cluster: config}
		o.AllNamespaces, o.IOStreams = true, genericiooptions.IOStreams{Out: &out, ErrOut: &out}
		o.Default.CapacityTypes = []string{"on-demand"}
		o.Catalog.Model.MaxPods = 110
		if err := o.Complete(nil); err != nil {
			b.Fatal(err)
		}
		if err := o.Validate(); err != nil {
			b.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	if want := fmt.Sprintf("%d pending pod(s) in all namespaces", benchPending); !strings.Contains(out.String(), want) || !strings.Contains(out.String(), fmt.Sprintf("Current nodes: %d,", benchNodes)) {
		b.Fatalf("output lacks %q or the node count:\n%.2000s", want, out.String())
	}
	b.StopTimer()
	cli := plugin(b, env.Kubeconfig, "explain", "-A")
	if cli.err != nil {
		b.Fatalf("explain: %v\n%s", cli.err, cli.stderr)
	}
	n := float64(b.N)
	b.ReportMetric(read.Seconds()/n, "read-s")
	b.ReportMetric(total.Seconds()/n, "total-s")
	b.ReportMetric(cli.took.Seconds(), "cli-s")
	b.ReportMetric(benchPods, "pods")
	b.ReportMetric(benchNodes, "nodes")
}

// populate creates the nodes and pods of the benchmark, many at a time.
func populate(b *testing.B, env *testenv.Env) {
	b.Helper()
	cfg := env.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	types := []struct {
		name, cpu, memory string
	}{{"m7i.2xlarge", "8", "32Gi"}, {"c7i.2xlarge", "8", "16Gi"}, {"r7i.xlarge", "4", "32Gi"}}
	parallel(b, benchNodes, func(i int) error {
		t := types[i%len(types)]
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", i), Labels: map[string]string{
				"kubernetes.io/hostname":           fmt.Sprintf("node-%03d", i),
				"node.kubernetes.io/instance-type": t.name,
				"topology.kubernetes.io/zone":      "us-east-1" + string(rune('a'+i%3)),
				"topology.kubernetes.io/region":    "us-east-1",
				"karpenter.sh/capacity-type":       []string{"on-demand", "spot"}[i%2],
			}},
		}
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(t.cpu), corev1.ResourceMemory: resource.MustParse(t.memory), corev1.ResourcePods: resource.MustParse("58")}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		_, err := c.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
	parallel(b, benchPods, func(i int) error {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%04d", i), Namespace: metav1.NamespaceDefault, Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50)}},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 100+(i%7)*50)), corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", 128+(i%5)*256)),
				}}}},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			},
		}
		if i >= benchPending {
			pod.Spec.NodeName = fmt.Sprintf("node-%03d", i%benchNodes)
		} else {
			// No node is of this type: the pod stays pending and the plan
			// proposes new nodes for it.
			pod.Spec.NodeSelector = map[string]string{"node.kubernetes.io/instance-type": "m7i.4xlarge"}
		}
		_, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
}

// parallel runs fn(0..n-1) on 16 workers and fails b on the first error.
func parallel(b *testing.B, n int, fn func(int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}
