package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// member is a claim whose node is usable but not open yet.
type member struct {
	claim *v1alpha1.NodeClaim
	node  *corev1.Node
}

// initialize opens the claim's node once it is usable (Ready, startup and
// not-ready taints gone): registration leaves the unregistered taint in
// place so that no pod lands on the node before then. A node opens on its
// own unless a pod planned onto it is placed against pods planned onto
// other nodes (see together); such nodes of one provisioning decision open
// together, once the others are usable too or GangWait has passed.
//
// Opening every node of a decision together made each node wait for the
// slowest of them: launch to initialized took 30 s median on a 46-node
// decision (issue 30), against 2 s for Karpenter, which opens each node on
// its own. A pod without such constraints can bind as soon as its node
// opens: its nomination keeps its room there.
func (c *Controller) initialize(ctx context.Context, claim *v1alpha1.NodeClaim) (reconcile.Result, error) {
	var node corev1.Node
	if err := c.client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // the garbage collector deals with vanished nodes
		}
		return reconcile.Result{}, err
	}
	if !claim.Usable(&node) {
		return reconcile.Result{}, nil // the Node's update brings us back
	}
	now := c.clock.Now()
	c.mu.Lock()
	since, ok := c.usable[claim.Name]
	if !ok {
		since = now
		c.usable[claim.Name] = now
	}
	c.mu.Unlock()
	members := []member{{claim: claim, node: &node}}
	if batch := claim.Annotations[v1alpha1.AnnotationBatch]; batch != "" && c.together(ctx, claim.Name) {
		var waiting int
		var err error
		if members, waiting, err = c.gang(ctx, claim, &node, batch); err != nil {
			return reconcile.Result{}, err
		}
		if left := c.opts.GangWait - now.Sub(since); waiting > 0 && left > 0 {
			// The last of them to become usable opens them all.
			logr.FromContextOrDiscard(ctx).V(1).Info("node usable; waiting for the other nodes of its decision", "node", node.Name, "waiting", waiting)
			return reconcile.Result{RequeueAfter: left}, nil
		}
	}
	stale, err := c.open(ctx, members)
	return reconcile.Result{Requeue: stale}, err
}

// gang returns the usable nodes of a provisioning decision that are not
// open yet and open together (see together), the claim's own first, and
// how many of those claims (the decision's claims not in the cache yet
// included) are still short of usable.
func (c *Controller) gang(ctx context.Context, claim *v1alpha1.NodeClaim, node *corev1.Node, batch string) ([]member, int, error) {
	var list v1alpha1.NodeClaimList
	if err := c.client.List(ctx, &list); err != nil {
		return nil, 0, err
	}
	members := []member{{claim: claim, node: node}}
	seen, waiting := 0, 0
	for i := range list.Items {
		s := &list.Items[i]
		if s.Annotations[v1alpha1.AnnotationBatch] != batch {
			continue
		}
		seen++
		if s.Name == claim.Name || s.DeletionTimestamp != nil || s.IsInitialized() || c.isOpened(s.Name) || !c.together(ctx, s.Name) {
			continue
		}
		var n corev1.Node
		if s.Status.NodeName == "" || c.client.Get(ctx, client.ObjectKey{Name: s.Status.NodeName}, &n) != nil || !s.Usable(&n) {
			waiting++
			continue
		}
		members = append(members, member{claim: s, node: &n})
	}
	if size, err := strconv.Atoi(claim.Annotations[v1alpha1.AnnotationBatchSize]); err == nil && seen < size {
		waiting += size - seen
	}
	return members, waiting, nil
}

// together reports whether a claim's node opens with the other nodes of
// its decision: a pod planned onto it and still pending has a constraint
// the scheduler checks against pods planned onto other nodes (see
// placedAgainstOthers).
func (c *Controller) together(ctx context.Context, claim string) bool {
	for _, key := range c.opts.NominatedPods(claim) {
		var pod corev1.Pod
		if c.client.Get(ctx, key, &pod) == nil && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && placedAgainstOthers(&pod) {
			return true
		}
	}
	return false
}

// placedAgainstOthers reports whether the scheduler admits a pod onto its
// planned node only once pods planned onto other nodes are there: a hard
// topology spread constraint (a domain may not run more than maxSkew ahead
// of the others, so a node whose zone opens first takes one pod of the
// spread and turns the rest away) or required pod affinity (the pods it
// must join may be planned elsewhere). Required anti-affinity is not such
// a constraint: it only forbids, and the plan already keeps its pods
// apart, so a node opening first admits them.
func placedAgainstOthers(pod *corev1.Pod) bool {
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.ScheduleAnyway {
			return true
		}
	}
	a := pod.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

func (c *Controller) isOpened(claim string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.opened[claim]
	return ok
}

// open makes the members' nodes schedulable as the plan intended: it sets
// status.nominatedNodeName on the pods planned for each node (but, with
// SkipSpreadNominations, those placedAgainstOthers: see above nominate),
// waits until
// the nominations are visible (the scheduler then keeps room on each node
// for its pods and tries that node first for them), removes the
// unregistered taint of all the nodes at once and marks the claims
// Initialized. Afterwards it puts back, for a while, nominations the
// scheduler dropped from pods still waiting.
//
// stale reports that a claim's Initialized condition could not be written
// because the claim had changed since it was read (a stale cached copy, or
// another writer): it is not counted as opened, and the retry reads it
// again and opens it (a no-op for its node) unless it is Initialized by
// then.
func (c *Controller) open(ctx context.Context, members []member) (stale bool, err error) {
	c.opening.Lock()
	defer c.opening.Unlock()
	members = slices.DeleteFunc(members, func(m member) bool { return c.isOpened(m.claim.Name) })
	if len(members) == 0 {
		return false, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	start := c.clock.Now()
	planned, unshown := c.nominate(ctx, members)
	nominated := c.clock.Since(start)

	errs := make([]error, len(members))
	written := make([]bool, len(members))
	var wg sync.WaitGroup
	for i := range members {
		wg.Go(func() { errs[i] = c.untaint(ctx, members[i].node) })
	}
	wg.Wait()
	for i := range members {
		if errs[i] != nil {
			continue
		}
		wg.Go(func() {
			claim := members[i].claim
			orig := claim.DeepCopy()
			claim.SetInitialized()
			done, err := c.transition(ctx, claim, orig)
			switch {
			case err != nil:
				errs[i] = err
			case done:
				written[i] = true
				metrics.NodeClaimsInitialized.WithLabelValues(claim.NodePool()).Inc()
			}
		})
	}
	wg.Wait()
	now := c.clock.Now()
	c.mu.Lock()
	for i, m := range members {
		if written[i] {
			c.opened[m.claim.Name] = now
		} else if errs[i] == nil {
			stale = true
		}
	}
	for name, at := range c.opened {
		if now.Sub(at) > time.Hour {
			delete(c.opened, name)
			delete(c.usable, name)
		}
	}
	c.mu.Unlock()
	for i, m := range members {
		if written[i] {
			log.Info("initialized", "node", m.node.Name, "nodeclaim", m.claim.Name, "openedWith", len(members)-1,
				"nominatedPods", len(planned), "nominating", nominated.Round(time.Millisecond).String(), "unshown", unshown)
		}
	}
	if len(planned) > 0 {
		go c.keep(context.WithoutCancel(ctx), planned)
	}
	return stale, errors.Join(errs...)
}

// untaint removes the unregistered taint from a node. A JSON patch that
// tests the taints it replaces leaves the node's other taints to whoever
// changes them concurrently, and does not conflict with status updates.
func (c *Controller) untaint(ctx context.Context, node *corev1.Node) error {
	taints := node.Spec.Taints
	for attempt := 0; ; attempt++ {
		if !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == cloud.UnregisteredTaintKey }) {
			return nil
		}
		rest := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool { return t.Key == cloud.UnregisteredTaintKey })
		if rest == nil {
			rest = []corev1.Taint{}
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/spec/taints", "value": taints},
			{"op": "replace", "path": "/spec/taints", "value": rest},
		})
		if err != nil {
			return err
		}
		_, err = c.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) || attempt == 3 {
			return client.IgnoreNotFound(err)
		}
		fresh, gerr := c.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if gerr != nil {
			return client.IgnoreNotFound(gerr)
		}
		taints = fresh.Spec.Taints
	}
}

// plannedPod is a pod planned onto a node being opened.
type plannedPod struct {
	key  types.NamespacedName
	node string
	// patched is when the nomination was last set; kept counts how often
	// keep set it again after the node opened.
	patched time.Time
	kept    int
	// waiting is set on a plan's late pod until the pods it depends on
	// are bound (Options.Waiting): it is not nominated meanwhile.
	waiting bool
}

// Bounds of the nominating before and after a node opens.
const (
	// nominateFor bounds the wait for the nominations to show before
	// the nodes open anyway.
	nominateFor = 3 * time.Second
	// renominateAfter is how long a nomination may take to show in the
	// cache before it is taken as dropped by the scheduler and set again.
	renominateAfter = 300 * time.Millisecond
	// maxKept bounds how often keep sets one pod's nomination again.
	maxKept = 3
)

// With Options.SkipSpreadNominations, pods placedAgainstOthers are given
// no nominated node. kube-scheduler admits a pod onto a node twice, with
// and without the pods nominated to that node added, and PodTopologySpread
// then counts the other pods nominated to the same node in its domain but
// none nominated to nodes of other domains: the pods of one spread planned
// onto one node turn each other away as over the skew, and bind one at a
// time as the others' nominations are dropped; each dropped nomination
// also sends every unschedulable pod back to the scheduler's queue (a
// nominated node changed). In bench-live's ramp that held 607 pods pending
// on open nodes for minutes (p95 242 s against Karpenter's 69 s; 107 s
// without their nominations). Without nominations, though, the scheduler
// places those pods where it scores best, into room the plan kept for
// others, whose pods are then planned again: TestLiveEqualsPlan's live
// cluster cost 1.082 times its plan instead of 1.035. Nominating them is
// the default: the plan shown is the cluster launched.

// nominate points the pods planned for the members' nodes at them and
// waits until the cache (which the scheduler's watch keeps pace with)
// shows every nomination. The scheduler drops the nomination of a pod it
// retries meanwhile, e.g. in the wave of retries that the nodes' arrival
// started; such nominations are set again, for nominateFor at most.
// unshown counts the nominations the cache did not show by then.
func (c *Controller) nominate(ctx context.Context, members []member) (pods []*plannedPod, unshown int) {
	if c.opts.NoNominations {
		return nil, 0
	}
	for _, m := range members {
		for _, key := range c.opts.NominatedPods(m.claim.Name) {
			var pod corev1.Pod
			if c.opts.SkipSpreadNominations && c.client.Get(ctx, key, &pod) == nil && placedAgainstOthers(&pod) {
				continue // not nominated: see above nominate
			}
			pods = append(pods, &plannedPod{key: key, node: m.node.Name, waiting: c.opts.Waiting(key)})
		}
	}
	if len(pods) == 0 {
		return nil, 0
	}
	deadline := c.clock.Now().Add(nominateFor)
	for {
		missing, _ := c.unnominated(ctx, pods)
		if len(missing) == 0 || c.clock.Now().After(deadline) {
			return pods, len(missing)
		}
		missing = slices.DeleteFunc(missing, func(p *plannedPod) bool { return c.clock.Since(p.patched) < renominateAfter })
		c.setNominated(ctx, missing)
		c.clock.Sleep(20 * time.Millisecond)
	}
}

// unnominated returns the planned pods, still pending and not waiting,
// whose nominated node the cache shows empty or different from their
// node, and counts the planned pods still pending (waiting ones included).
func (c *Controller) unnominated(ctx context.Context, pods []*plannedPod) (missing []*plannedPod, pending int) {
	for _, p := range pods {
		var pod corev1.Pod
		if err := c.client.Get(ctx, p.key, &pod); err != nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue
		}
		pending++
		if !p.waiting && pod.Status.NominatedNodeName != p.node {
			missing = append(missing, p)
		}
	}
	return missing, pending
}

// setNominated patches status.nominatedNodeName of pods, 16 at a time.
func (c *Controller) setNominated(ctx context.Context, pods []*plannedPod) {
	if len(pods) == 0 {
		return
	}
	work := make(chan *plannedPod)
	var wg sync.WaitGroup
	for range min(16, len(pods)) {
		wg.Go(func() {
			for p := range work {
				patch := []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, p.node))
				_, err := c.kube.CoreV1().Pods(p.key.Namespace).Patch(ctx, p.key.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
				if err != nil && !apierrors.IsNotFound(err) {
					logr.FromContextOrDiscard(ctx).V(1).Info("could not nominate a pod", "pod", p.key.String(), "error", err.Error())
				}
			}
		})
	}
	for _, p := range pods {
		attempt := "again"
		if p.patched.IsZero() {
			attempt = "first"
		}
		metrics.PodsNominated.WithLabelValues(attempt).Inc()
		p.patched = c.clock.Now()
		work <- p
	}
	close(work)
	wg.Wait()
}

// keep puts back, for KeepNominations or until the pods are bound, the
// nominations the scheduler dropped. The scheduler clears a pod's
// nominated node whenever a try fails everywhere, which can happen while
// the nodes of one decision open one after the other; a pod without its
// nomination is placed by the scheduler's scoring and may take room the
// plan kept for another. It also nominates the waiting (late) pods once
// the pods they depend on are bound, or LateWait has passed, and keeps
// their nominations for KeepNominations from then.
func (c *Controller) keep(ctx context.Context, pods []*plannedPod) {
	start := c.clock.Now()
	until := start.Add(c.opts.KeepNominations)
	ctx, cancel := context.WithTimeout(ctx, c.opts.KeepNominations+c.opts.LateWait)
	defer cancel()
	tick := c.clock.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	restored, released := 0, 0
	defer func() {
		if restored > 0 {
			logr.FromContextOrDiscard(ctx).Info("put back nominations the scheduler dropped", "pods", restored)
		}
		if released > 0 {
			logr.FromContextOrDiscard(ctx).Info("nominated late pods after the pods they follow", "pods", released)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		now := c.clock.Now()
		late, waiting := c.release(pods, now.Sub(start) >= c.opts.LateWait)
		if len(late) > 0 {
			released += len(late)
			c.setNominated(ctx, late)
			until = now.Add(c.opts.KeepNominations)
		}
		missing, pending := c.unnominated(ctx, pods)
		if pending == 0 || (waiting == 0 && now.After(until)) {
			return
		}
		// A pod the scheduler nominated elsewhere is being bound there or
		// preempting; only emptied nominations are put back.
		var cleared []*plannedPod
		for _, p := range missing {
			var pod corev1.Pod
			if c.client.Get(ctx, p.key, &pod) == nil && pod.Status.NominatedNodeName == "" && p.kept < maxKept &&
				c.clock.Since(p.patched) > renominateAfter {
				p.kept++
				cleared = append(cleared, p)
			}
		}
		restored += len(cleared)
		c.setNominated(ctx, cleared)
	}
}

// release ends the wait of the waiting pods that Options.Waiting no longer
// holds (all of them when expired) and returns them, and how many still
// wait.
func (c *Controller) release(pods []*plannedPod, expired bool) (released []*plannedPod, waiting int) {
	for _, p := range pods {
		if !p.waiting {
			continue
		}
		if expired || !c.opts.Waiting(p.key) {
			p.waiting = false
			released = append(released, p)
			continue
		}
		waiting++
	}
	return released, waiting
}
