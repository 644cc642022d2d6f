package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// The judge: the real kube-scheduler decides whether a plan is one it
// agrees with. For each problem the plan's new nodes are created as kwok
// Nodes with the labels, taints and allocatable the plan gives them; the
// pods are created gated, then released one after another in an order the
// plan's constraints allow (judgeOrder), each with status.nominatedNodeName
// set to its planned node, which kube-scheduler evaluates first and binds to
// when its filters pass. Every planned pod must be bound to its planned node
// and every pod the plan leaves pending must stay pending.
//
// Released pods carry descending priorities (one PriorityClass per rank,
// preemption Never), so that the scheduler takes them in the judge's order
// and so that, when it evaluates a pod, no pod released after it counts as
// nominated to the node (kube-scheduler treats nominated pods of equal or
// higher priority as already running there when filtering).
//
// Problems run side by side in batches, each isolated: its own namespaces
// (a problem's "default" becomes "j<k>-default"), node names prefixed
// "j<k>-", and every node labelled judgeLabelProblem=j<k> with every pod
// selecting it. The label is provably neutral inside the problem: every node
// of the problem has it, and no selector of the problem names a key of the
// judge's domain (judgeCase.validate). Across problems it keeps a pod off
// other problems' nodes and out of their topology-spread domains (node
// affinity policy Honor); problems with an Ignore policy run alone.

const (
	judgeLabelDomain  = "judge.rightsize.dev/"
	judgeLabelProblem = judgeLabelDomain + "problem"
	judgeLabelBatch   = judgeLabelDomain + "batch"
	judgeGate         = "rightsize.dev/judge"
	// judgePriorityTop is the priority of the first pod released; the
	// plan's unschedulable pods get judgePriorityPending, below every rank.
	judgePriorityTop     = 1_000_000
	judgePriorityPending = "rightsize-judge-pending"
)

// judgeCase is one problem and its plan, as the judge runs it.
type judgeCase struct {
	// name identifies the problem in messages, e.g. "random seed=17".
	name string
	p    *solver.Problem
	plan *solver.Plan
	// prefix isolates the case on the plane ("j<k>").
	prefix string
	// nodeNames and nodeLabels are the planned nodes' names and labels
	// (without the judge's own).
	nodeNames  []string
	nodeLabels []map[string]string
	order      []int    // placed pods in release order
	stuck      []string // pods judgeOrder could not order
	alone      bool     // must not share the plane with other cases
}

// judgeDisagreement is one pod kube-scheduler did not treat as planned.
type judgeDisagreement struct {
	c                              *judgeCase
	pod                            int
	planned, actual, reason, event string
}

func (d judgeDisagreement) String() string {
	pod := &d.c.p.Pods[d.pod]
	planned := d.planned
	if planned == "" {
		planned = "(pending)"
	}
	actual := d.actual
	if actual == "" {
		actual = "(pending)"
	}
	s := fmt.Sprintf("%s: pod %s planned %s, scheduler %s", d.c.name, pod.Key(), planned, actual)
	if d.reason != "" {
		s += ": " + d.reason
	}
	return s
}

// newJudgeCase plans the problem and prepares it for the plane as case k.
func newJudgeCase(name string, k int, p *solver.Problem) (*judgeCase, error) {
	if len(p.Nodes) > 0 || len(p.DaemonSets) > 0 {
		return nil, fmt.Errorf("%s: the judge creates only planned nodes; a problem with existing nodes or DaemonSets is not supported", name)
	}
	plan, err := solver.Solve(p)
	if err != nil {
		return nil, fmt.Errorf("%s: solve: %w", name, err)
	}
	c := &judgeCase{name: name, p: p, plan: plan, prefix: fmt.Sprintf("j%d", k)}
	if err := c.validate(); err != nil {
		return nil, err
	}
	for i := range plan.NewNodes {
		nodeName := fmt.Sprintf("%s-n%d", c.prefix, i)
		l, err := plannedNodeLabels(p, &plan.NewNodes[i], nodeName)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		c.nodeNames = append(c.nodeNames, nodeName)
		c.nodeLabels = append(c.nodeLabels, l)
	}
	c.order, c.stuck, err = judgeOrder(p, plan, c.nodeLabels)
	if err != nil {
		return nil, fmt.Errorf("%s: order: %w", name, err)
	}
	return c, nil
}

// validate checks that the judge's isolation cannot change the problem: no
// selector, affinity or requirement of the problem names a key of the
// judge's label domain, and notes whether the case must run alone.
func (c *judgeCase) validate() error {
	bad := func(key string) error {
		if strings.HasPrefix(key, judgeLabelDomain) {
			return fmt.Errorf("%s: the problem uses label %s of the judge's own domain", c.name, key)
		}
		return nil
	}
	terms := func(ts []solver.Term) error {
		for _, t := range ts {
			for _, r := range t {
				if err := bad(r.Key); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := range c.p.Pods {
		pod := &c.p.Pods[i]
		for k := range pod.NodeSelector {
			if err := bad(k); err != nil {
				return err
			}
		}
		if err := terms(pod.Affinity); err != nil {
			return err
		}
		for _, sc := range pod.Spread {
			if err := bad(sc.TopologyKey); err != nil {
				return err
			}
			if sc.NodeAffinityPolicy == "Ignore" {
				c.alone = true
			}
		}
		for _, t := range append(slices.Clone(pod.PodAffinity), pod.PodAntiAffinity...) {
			if err := bad(t.TopologyKey); err != nil {
				return err
			}
		}
		for _, pref := range pod.Preferences {
			if err := terms([]solver.Term{pref.NodeTerm}); err != nil {
				return err
			}
		}
	}
	for i := range c.p.Pools {
		for _, r := range c.p.Pools[i].Requirements {
			if err := bad(r.Key); err != nil {
				return err
			}
		}
	}
	return nil
}

// plannedNodeLabels are the labels a planned node carries, as a node
// launched for it is labelled: its instance type's, its pool's template
// labels, the pool name, the values of the pool's single-valued In
// requirements on other keys (Karpenter makes those node labels), its
// zone, capacity type and hostname.
func plannedNodeLabels(p *solver.Problem, n *solver.NewNode, name string) (map[string]string, error) {
	pi := slices.IndexFunc(p.Pools, func(pool solver.Pool) bool { return pool.Name == n.Pool })
	if pi < 0 {
		return nil, fmt.Errorf("planned node of unknown pool %q", n.Pool)
	}
	types := p.PoolTypes(pi)
	ti := slices.IndexFunc(types, func(it solver.InstanceType) bool { return it.Name == n.InstanceType })
	if ti < 0 {
		return nil, fmt.Errorf("planned node of unknown type %q in pool %s", n.InstanceType, n.Pool)
	}
	pool := &p.Pools[pi]
	l := map[string]string{solver.LabelInstanceType: n.InstanceType}
	for k, v := range types[ti].Labels {
		l[k] = v
	}
	for _, r := range pool.Requirements {
		if r.Operator == solver.OpIn && len(r.Values) == 1 {
			if _, ok := l[r.Key]; !ok {
				l[r.Key] = r.Values[0]
			}
		}
	}
	for k, v := range pool.Labels {
		l[k] = v
	}
	// Values the plan picked for keys the pool leaves open.
	for k, v := range n.Labels {
		l[k] = v
	}
	l[solver.LabelNodePool] = pool.Name
	l[solver.LabelZone] = n.Zone
	l[solver.LabelCapacityType] = n.CapacityType
	l[labelHostname] = name
	return l, nil
}

// judgeRun is one run of the judge on a plane.
type judgeRun struct {
	t      testing.TB
	env    *testenv.Env
	client kubernetes.Interface
	// ranks is how many rank PriorityClasses exist.
	ranks int
	// stats
	problems, nodes, pods int
}

func newJudgeRun(t testing.TB, env *testenv.Env) *judgeRun {
	return &judgeRun{t: t, env: env, client: env.Client()}
}

func rankClass(r int) string { return fmt.Sprintf("rightsize-judge-%d", r) }

// ensureRanks creates the PriorityClasses of ranks 0..n-1 and the pending one.
func (r *judgeRun) ensureRanks(ctx context.Context, n int) error {
	if r.ranks == 0 {
		if err := r.createClass(ctx, judgePriorityPending, 1); err != nil {
			return err
		}
	}
	var mu sync.Mutex
	var firstErr error
	judgeParallel(16, n-r.ranks, func(i int) {
		if err := r.createClass(ctx, rankClass(r.ranks+i), judgePriorityTop-int32(r.ranks+i)); err != nil {
			mu.Lock()
			firstErr = cmpErr(firstErr, err)
			mu.Unlock()
		}
	})
	if firstErr != nil {
		return firstErr
	}
	r.ranks = max(r.ranks, n)
	return nil
}

func (r *judgeRun) createClass(ctx context.Context, name string, value int32) error {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
		PreemptionPolicy: ptr.To(corev1.PreemptNever), Description: "kubectl-rightsize e2e judge: release order"}
	_, err := r.client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("judge: create PriorityClass %s: %w", name, err)
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// judgeParallel runs f(0..n-1) on up to workers goroutines.
func judgeParallel(workers, n int, f func(int)) {
	if n <= 0 {
		return
	}
	ch := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				f(i)
			}
		}()
	}
	for i := range n {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

// namespace maps a problem namespace to the case's.
func (c *judgeCase) namespace(ns string) string { return c.prefix + "-" + ns }

func (c *judgeCase) namespaces() []string {
	var out []string
	for i := range c.p.Pods {
		if ns := c.namespace(c.p.Pods[i].Namespace); !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out
}

// judgeBatches splits cases into batches of at most size pods... cases that
// must run alone get a batch each.
func judgeBatches(cases []*judgeCase, maxPods int) [][]*judgeCase {
	var out [][]*judgeCase
	var cur []*judgeCase
	pods := 0
	for _, c := range cases {
		if c.alone {
			out = append(out, []*judgeCase{c})
			continue
		}
		if len(cur) > 0 && pods+len(c.p.Pods) > maxPods {
			out = append(out, cur)
			cur, pods = nil, 0
		}
		cur = append(cur, c)
		pods += len(c.p.Pods)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// judge runs the cases in batches of about batchPods pods and returns every
// disagreement.
func (r *judgeRun) judge(ctx context.Context, cases []*judgeCase, batchPods int) ([]judgeDisagreement, error) {
	maxRank := 0
	for _, c := range cases {
		maxRank = max(maxRank, len(c.order))
	}
	if err := r.ensureRanks(ctx, maxRank); err != nil {
		return nil, err
	}
	var all []judgeDisagreement
	for bi, batch := range judgeBatches(cases, batchPods) {
		start := time.Now()
		d, err := r.batch(ctx, fmt.Sprintf("b%d", bi), batch)
		if err != nil {
			return all, err
		}
		all = append(all, d...)
		pods, nodes := 0, 0
		for _, c := range batch {
			pods += len(c.p.Pods)
			nodes += len(c.plan.NewNodes)
		}
		r.t.Logf("judge: batch %d: %d problems, %d nodes, %d pods in %s, %d disagreements", bi, len(batch), nodes, pods,
			time.Since(start).Round(time.Millisecond), len(d))
	}
	return all, nil
}

// batch runs cases side by side and cleans up after them.
func (r *judgeRun) batch(ctx context.Context, id string, cases []*judgeCase) ([]judgeDisagreement, error) {
	began := time.Now()
	phase := func(name string) {
		r.t.Logf("judge: batch %s: %s after %s", id, name, time.Since(began).Round(time.Millisecond))
	}
	defer func() { r.cleanup(id, cases); phase("cleaned up") }()
	// Namespaces, nodes and pods, all at once.
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		firstErr = cmpErr(firstErr, err)
		errMu.Unlock()
	}
	type nodeJob struct {
		c *judgeCase
		i int
	}
	var nodeJobs []nodeJob
	var namespaces []string
	for _, c := range cases {
		for i := range c.nodeNames {
			nodeJobs = append(nodeJobs, nodeJob{c, i})
		}
		namespaces = append(namespaces, c.namespaces()...)
	}
	judgeParallel(16, len(namespaces), func(i int) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaces[i]}}
		if _, err := r.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			fail(fmt.Errorf("judge: create namespace %s: %w", namespaces[i], err))
		}
	})
	judgeParallel(16, len(nodeJobs), func(j int) {
		if err := r.createNode(ctx, id, nodeJobs[j].c, nodeJobs[j].i); err != nil {
			fail(err)
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	want := make(map[string]corev1.ResourceList, len(nodeJobs))
	for _, j := range nodeJobs {
		want[j.c.nodeNames[j.i]] = judgeResourceList(j.c.p, j.c.plan.NewNodes[j.i].Allocatable)
	}
	phase("nodes created")
	if err := r.waitNodesReady(ctx, id, want); err != nil {
		return nil, err
	}
	phase("nodes ready")
	type podJob struct {
		c    *judgeCase
		i    int
		rank int // -1 for a pod the plan leaves pending
	}
	var podJobs []podJob
	for _, c := range cases {
		rank := make([]int, len(c.p.Pods))
		for i := range rank {
			rank[i] = -1
		}
		for k, i := range c.order {
			rank[i] = k
		}
		for i := range c.p.Pods {
			podJobs = append(podJobs, podJob{c, i, rank[i]})
		}
	}
	judgeParallel(16, len(podJobs), func(j int) {
		pj := podJobs[j]
		if err := r.createPod(ctx, pj.c, pj.i, pj.rank); err != nil {
			fail(err)
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}

	phase("pods created")
	board := newPodBoard(r.client, namespaces)
	boardCtx, stopBoard := context.WithCancel(ctx)
	defer stopBoard()
	go board.run(boardCtx)

	var mu sync.Mutex
	var out []judgeDisagreement
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := r.release(ctx, board, c)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, d...)
			if err != nil {
				firstErr = cmpErr(firstErr, err)
			}
		}()
	}
	wg.Wait()
	phase("released and settled")
	for _, c := range cases {
		r.problems++
		r.nodes += len(c.plan.NewNodes)
		r.pods += len(c.p.Pods)
	}
	return out, firstErr
}

// createNode creates planned node i of the case as a kwok Node.
func (r *judgeRun) createNode(ctx context.Context, batch string, c *judgeCase, i int) error {
	n := &c.plan.NewNodes[i]
	pi := slices.IndexFunc(c.p.Pools, func(pool solver.Pool) bool { return pool.Name == n.Pool })
	types := c.p.PoolTypes(pi)
	it := &types[slices.IndexFunc(types, func(it solver.InstanceType) bool { return it.Name == n.InstanceType })]
	labels := map[string]string{judgeLabelProblem: c.prefix, judgeLabelBatch: batch}
	for k, v := range c.nodeLabels[i] {
		labels[k] = v
	}
	var taints []corev1.Taint
	for _, t := range c.p.Pools[pi].Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	capacity := judgeResourceList(c.p, it.Capacity)
	alloc := judgeResourceList(c.p, n.Allocatable)
	// The status goes in the create, as a kubelet registers a node: kwok's
	// first stage renders from this create, and a node it saw without an
	// allocatable would get kwok's own (1k CPU with its stock stages).
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: c.nodeNames[i], Labels: labels, Annotations: map[string]string{
			testenv.NodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: alloc,
			NodeInfo: corev1.NodeSystemInfo{Architecture: labels[labelArch], OperatingSystem: labels["kubernetes.io/os"], KubeletVersion: "fake"}},
	}
	if _, err := r.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("judge: %s: create node %s: %w", c.name, node.Name, err)
	}
	return nil
}

// judgeResourceList converts solver quantities to a resource list; zero
// GPUs and extended resources are left out, as a kubelet reports them.
func judgeResourceList(p *solver.Problem, q solver.Resources) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := range solver.MaxResources {
		name := p.ResourceName(i)
		if name == "" || (i >= solver.GPU && q[i] == 0) {
			continue
		}
		l[corev1.ResourceName(name)] = cloud.Quantity(i, q[i])
	}
	return l
}

// waitNodesReady waits until the batch's nodes are Ready, untainted by the
// node lifecycle controller and with the allocatable the plan gave them
// (want, by node name): a node kube-scheduler sees larger than planned
// takes pods the plan could not place there, a wrong verdict.
func (r *judgeRun) waitNodesReady(ctx context.Context, batch string, want map[string]corev1.ResourceList) error {
	n := len(want)
	deadline := time.Now().Add(nodesReadyTimeout)
	for {
		list, err := r.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: judgeLabelBatch + "=" + batch})
		if err != nil {
			return fmt.Errorf("judge: list nodes: %w", err)
		}
		ready := 0
		var notReady string
		for _, node := range list.Items {
			ok := false
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ok = true
				}
			}
			for _, t := range node.Spec.Taints {
				if strings.HasPrefix(t.Key, "node.kubernetes.io/") {
					ok = false
				}
			}
			if ok && !equality.Semantic.DeepEqual(node.Status.Allocatable, want[node.Name]) {
				return fmt.Errorf("judge: node %s is Ready with allocatable %v, the plan gave it %v", node.Name, node.Status.Allocatable, want[node.Name])
			}
			if ok {
				ready++
			} else {
				notReady = node.Name
			}
		}
		if ready == n && len(list.Items) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("judge: %d of %d nodes of batch %s Ready within %s (e.g. not %s)", ready, n, batch, nodesReadyTimeout, notReady)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// judgePod is the pod of a problem pod, in the case's namespace, gated, with
// the priority of its release rank.
func judgePod(c *judgeCase, i, rank int) *corev1.Pod {
	pod := &c.p.Pods[i]
	sel := map[string]string{judgeLabelProblem: c.prefix}
	for k, v := range pod.NodeSelector {
		sel[k] = v
	}
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for ri := range solver.MaxResources {
		name := c.p.ResourceName(ri)
		q := pod.Requests[ri]
		if name == "" || ri == solver.Pods || q == 0 {
			continue
		}
		qty := cloud.Quantity(ri, q)
		if ri != solver.CPU && ri != solver.Memory && ri != solver.EphemeralStorage {
			// Extended resources are not overcommitted: limits equal requests.
			limits[corev1.ResourceName(name)] = qty
		}
		requests[corev1.ResourceName(name)] = qty
	}
	class := judgePriorityPending
	if rank >= 0 {
		class = rankClass(rank)
	}
	affinity := v1NodeAffinity(pod.Affinity)
	podTerms := func(ts []solver.PodAffinityTerm) []corev1.PodAffinityTerm {
		var out []corev1.PodAffinityTerm
		for _, t := range ts {
			term := corev1.PodAffinityTerm{LabelSelector: v1Selector(t.Selector), TopologyKey: t.TopologyKey}
			for _, ns := range t.Namespaces {
				term.Namespaces = append(term.Namespaces, c.namespace(ns))
			}
			out = append(out, term)
		}
		return out
	}
	if len(pod.PodAffinity) > 0 || len(pod.PodAntiAffinity) > 0 {
		if affinity == nil {
			affinity = &corev1.Affinity{}
		}
		if len(pod.PodAffinity) > 0 {
			affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: podTerms(pod.PodAffinity)}
		}
		if len(pod.PodAntiAffinity) > 0 {
			affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: podTerms(pod.PodAntiAffinity)}
		}
	}
	var spread []corev1.TopologySpreadConstraint
	for _, sc := range pod.Spread {
		tsc := corev1.TopologySpreadConstraint{MaxSkew: sc.MaxSkew, TopologyKey: sc.TopologyKey,
			WhenUnsatisfiable: corev1.UnsatisfiableConstraintAction(sc.WhenUnsatisfiable), LabelSelector: v1Selector(sc.Selector)}
		if sc.MinDomains > 0 {
			tsc.MinDomains = ptr.To(sc.MinDomains)
		}
		if sc.NodeAffinityPolicy != "" {
			tsc.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicy(sc.NodeAffinityPolicy))
		}
		spread = append(spread, tsc)
	}
	var tolerations []corev1.Toleration
	for _, t := range pod.Tolerations {
		tolerations = append(tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	var ports []corev1.ContainerPort
	for _, hp := range pod.HostPorts {
		ports = append(ports, corev1.ContainerPort{ContainerPort: hp.Port, HostPort: hp.Port, HostIP: hp.HostIP,
			Protocol: corev1.Protocol(cmp.Or(hp.Protocol, "TCP"))})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: c.namespace(pod.Namespace), Labels: pod.Labels},
		Spec: corev1.PodSpec{
			SchedulingGates:               []corev1.PodSchedulingGate{{Name: judgeGate}},
			PriorityClassName:             class,
			NodeSelector:                  sel,
			Affinity:                      affinity,
			TopologySpreadConstraints:     spread,
			Tolerations:                   tolerations,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  ptr.To(false),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Ports: ports,
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}},
		},
	}
}

// createPod creates pod i of the case, retrying while its namespace's
// default ServiceAccount does not exist yet.
func (r *judgeRun) createPod(ctx context.Context, c *judgeCase, i, rank int) error {
	pod := judgePod(c, i, rank)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := r.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "serviceaccount") || time.Now().After(deadline) {
			return fmt.Errorf("judge: %s: create pod %s/%s: %w", c.name, pod.Namespace, pod.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// release nominates and ungates the case's pods in order, waits for the
// scheduler and returns the disagreements.
func (r *judgeRun) release(ctx context.Context, board *podBoard, c *judgeCase) ([]judgeDisagreement, error) {
	nodeOf := make([]string, len(c.p.Pods))
	for ni, n := range c.plan.NewNodes {
		for _, pi := range n.Pods {
			nodeOf[pi] = c.nodeNames[ni]
		}
	}
	ungate := []byte(`[{"op":"remove","path":"/spec/schedulingGates"}]`)
	for _, i := range c.order {
		pod := &c.p.Pods[i]
		ns := c.namespace(pod.Namespace)
		nominate := fmt.Appendf(nil, `{"status":{"nominatedNodeName":%q}}`, nodeOf[i])
		if _, err := r.client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, nominate, metav1.PatchOptions{}, "status"); err != nil {
			return nil, fmt.Errorf("judge: %s: nominate %s/%s: %w", c.name, ns, pod.Name, err)
		}
		if _, err := r.client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
			return nil, fmt.Errorf("judge: %s: ungate %s/%s: %w", c.name, ns, pod.Name, err)
		}
	}
	placed := make([]bool, len(c.p.Pods))
	for _, i := range c.order {
		placed[i] = true
	}
	for i := range c.p.Pods {
		if !placed[i] {
			ns := c.namespace(c.p.Pods[i].Namespace)
			if _, err := r.client.CoreV1().Pods(ns).Patch(ctx, c.p.Pods[i].Name, types.JSONPatchType, ungate, metav1.PatchOptions{}); err != nil {
				return nil, fmt.Errorf("judge: %s: ungate %s/%s: %w", c.name, ns, c.p.Pods[i].Name, err)
			}
		}
	}
	key := func(i int) string { return c.namespace(c.p.Pods[i].Namespace) + "/" + c.p.Pods[i].Name }
	// Settled: every pod bound or refused at least once (the pending ones
	// are released last, with the lowest priority, so their first try sees
	// every placed pod), then a short grace for a retry to change that.
	deadline := time.Now().Add(45 * time.Second)
	var settledAt time.Time
	for {
		time.Sleep(300 * time.Millisecond)
		snap := board.snapshot()
		done := true
		for i := range c.p.Pods {
			if st := snap[key(i)]; st.node == "" && st.reason != corev1.PodReasonUnschedulable {
				done = false
			}
		}
		if done && settledAt.IsZero() {
			settledAt = time.Now()
		}
		if (!settledAt.IsZero() && time.Since(settledAt) > 2*time.Second) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	snap := board.snapshot()
	var out []judgeDisagreement
	for i := range c.p.Pods {
		st := snap[key(i)]
		if st.node != nodeOf[i] {
			d := judgeDisagreement{c: c, pod: i, planned: nodeOf[i], actual: st.node, reason: st.message}
			if nodeOf[i] == "" {
				d.reason = "the plan leaves it pending: " + planReason(c.plan, i)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

func planReason(plan *solver.Plan, i int) string {
	for _, u := range plan.Unschedulable {
		if u.Pod == i {
			return u.Reason
		}
	}
	return ""
}

// cleanup deletes the batch's pods and nodes.
func (r *judgeRun) cleanup(batch string, cases []*judgeCase) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var namespaces []string
	for _, c := range cases {
		namespaces = append(namespaces, c.namespaces()...)
	}
	judgeParallel(8, len(namespaces), func(i int) {
		err := r.client.CoreV1().Pods(namespaces[i]).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err != nil {
			r.t.Logf("judge: delete pods of %s: %v", namespaces[i], err)
		}
	})
	err := r.client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: judgeLabelBatch + "=" + batch})
	if err != nil {
		r.t.Logf("judge: delete nodes of batch %s: %v", batch, err)
	}
}

// podBoard keeps the latest state of the pods of some namespaces, listed
// periodically.
type podBoard struct {
	client     kubernetes.Interface
	namespaces []string
	mu         sync.Mutex
	pods       map[string]podState
}

// podState is what the judge reads of a pod.
type podState struct {
	node string
	// reason and message are of the PodScheduled condition when False.
	reason, message string
}

func newPodBoard(client kubernetes.Interface, namespaces []string) *podBoard {
	return &podBoard{client: client, namespaces: namespaces, pods: map[string]podState{}}
}

func (b *podBoard) run(ctx context.Context) {
	for ctx.Err() == nil {
		next := map[string]podState{}
		var mu sync.Mutex
		judgeParallel(8, len(b.namespaces), func(i int) {
			list, err := b.client.CoreV1().Pods(b.namespaces[i]).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range list.Items {
				st := podState{node: p.Spec.NodeName}
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
						st.reason, st.message = cond.Reason, cond.Message
					}
				}
				next[p.Namespace+"/"+p.Name] = st
			}
		})
		b.mu.Lock()
		for k, v := range next {
			b.pods[k] = v
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (b *podBoard) snapshot() map[string]podState {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]podState, len(b.pods))
	for k, v := range b.pods {
		out[k] = v
	}
	return out
}

// dumpCase writes the case's problem as JSON for minimisation and returns
// the path.
func dumpCase(c *judgeCase) (string, error) {
	b, err := json.MarshalIndent(c.p, "", " ")
	if err != nil {
		return "", err
	}
	name := strings.NewReplacer(" ", "-", "=", "", "/", "-").Replace(c.name)
	path := filepath.Join(os.TempDir(), "rightsize-judge-"+name+".json")
	return path, os.WriteFile(path, b, 0o600)
}

// nodesReadyTimeout bounds how long kwok may take to make a batch's nodes
// Ready; a loaded 2-core machine needs more than a minute for 300 nodes.
const nodesReadyTimeout = 3 * time.Minute

// reportDisagreements fails t with every pod kube-scheduler does not bind
// where the plan says: a pod the plan places that kube-scheduler binds
// elsewhere or leaves pending (the plan is wrong), and a pod the plan leaves
// pending that kube-scheduler binds to a planned node (the plan is too
// cautious: it could have placed the pod, and it over-reports pending pods
// and under-reports the cost). Zero disagreements of either kind are allowed.
func reportDisagreements(t testing.TB, ds []judgeDisagreement, judged []*judgeCase) {
	t.Helper()
	if len(ds) == 0 {
		return
	}
	sort.SliceStable(ds, func(a, b int) bool { return ds[a].c.prefix < ds[b].c.prefix })
	var b strings.Builder
	var last *judgeCase
	cases := 0
	for _, d := range ds {
		if d.c != last {
			last = d.c
			cases++
			path, err := dumpCase(d.c)
			if err != nil {
				path = "(not written: " + err.Error() + ")"
			}
			fmt.Fprintf(&b, "\n%s (%d pods, %d planned nodes; problem in %s):", d.c.name, len(d.c.p.Pods), len(d.c.plan.NewNodes), path)
			for _, s := range d.c.stuck {
				fmt.Fprintf(&b, "\n  release order: no allowed pod left; released %s", s)
			}
		}
		fmt.Fprintf(&b, "\n  %s", d)
	}
	t.Errorf("kube-scheduler disagrees with %d placements in %d of %d problems:%s", len(ds), cases, len(judged), b.String())
}
