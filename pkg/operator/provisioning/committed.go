package provisioning

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// The pods nominated to an in-flight NodeClaim are its committed capacity:
// every batch plans around them (see snapshot), and the claim records them
// (v1alpha1.AnnotationNominatedPods), so that an operator restarted while
// the claim is in flight holds them there instead of planning them again.

// encodeNominated is the AnnotationNominatedPods value of pods: their
// namespace/name, sorted, comma separated.
func encodeNominated(pods []types.NamespacedName) string {
	keys := make([]string, len(pods))
	for i, p := range pods {
		keys[i] = p.String()
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// decodeNominated reads an AnnotationNominatedPods value; malformed
// entries (no namespace) are skipped.
func decodeNominated(v string) []types.NamespacedName {
	var out []types.NamespacedName
	for key := range strings.SplitSeq(v, ",") {
		ns, name, ok := strings.Cut(strings.TrimSpace(key), "/")
		if ok && ns != "" && name != "" {
			out = append(out, types.NamespacedName{Namespace: ns, Name: name})
		}
	}
	return out
}

// committedClaims maps each pod a live (not deleting) NodeClaim records as
// nominated to that claim; a pod two claims record goes to the newer one.
func committedClaims(claims []*v1alpha1.NodeClaim) map[types.NamespacedName]*v1alpha1.NodeClaim {
	out := map[types.NamespacedName]*v1alpha1.NodeClaim{}
	for _, c := range claims {
		if c.DeletionTimestamp != nil {
			continue
		}
		for _, key := range decodeNominated(c.Annotations[v1alpha1.AnnotationNominatedPods]) {
			if prev := out[key]; prev == nil || prev.CreationTimestamp.Before(&c.CreationTimestamp) {
				out[key] = c
			}
		}
	}
	return out
}

// restore nominates the pending pods the provisioner never planned to the
// claims that record them: after a restart, or a leader change, the new
// leader holds the room its predecessor promised. A pod this replica
// planned keeps what this replica decided (a nomination that lapsed or no
// longer fit is not brought back). It returns how many pods it restored.
func (p *Provisioner) restore(pending []*corev1.Pod, committed map[types.NamespacedName]*v1alpha1.NodeClaim, now time.Time) int {
	if len(committed) == 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	restored := 0
	for _, pod := range pending {
		if _, known := p.planned[pod.UID]; known {
			continue // this replica planned it: what it decided stands
		}
		key := client.ObjectKeyFromObject(pod)
		c := committed[key]
		if c == nil {
			continue
		}
		p.nominations[pod.UID] = nomination{claim: c.Name, pod: key, at: now}
		p.planned[pod.UID] = c.Name
		restored++
	}
	return restored
}

// plannedOnto records that the plan put a pod on a claim's node and counts,
// in rightsize_pods_nominated_total{attempt="moved"}, a pod planned before
// onto another node. The caller holds p.mu.
func (p *Provisioner) plannedOnto(uid types.UID, claim string) {
	if prev, ok := p.planned[uid]; ok && prev != claim {
		metrics.PodsNominated.WithLabelValues("moved").Inc()
	}
	p.planned[uid] = claim
}

// commit writes to each of the claims named in touched (by claim name) the
// pods nominated to it now, where that differs from what the claim records.
// A claim that cannot be written keeps its old record: the pods stay
// nominated in memory, and only a restart before the next write loses them.
func (p *Provisioner) commit(ctx context.Context, claims map[string]*v1alpha1.NodeClaim, touched map[string]bool) error {
	type write struct {
		claim *v1alpha1.NodeClaim
		value string
	}
	var writes []write
	p.mu.Lock()
	byClaim := map[string][]types.NamespacedName{}
	for _, n := range p.nominations {
		if touched[n.claim] {
			byClaim[n.claim] = append(byClaim[n.claim], n.pod)
		}
	}
	p.mu.Unlock()
	for name := range touched {
		c := claims[name]
		if c == nil || c.DeletionTimestamp != nil {
			continue
		}
		if v := encodeNominated(byClaim[name]); v != c.Annotations[v1alpha1.AnnotationNominatedPods] {
			writes = append(writes, write{claim: c, value: v})
		}
	}
	if len(writes) == 0 {
		return nil
	}
	work := make(chan write)
	errs := make(chan error, len(writes))
	var wg sync.WaitGroup
	for range min(8, len(writes)) {
		wg.Go(func() {
			for w := range work {
				patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.AnnotationNominatedPods: w.value}}})
				if err == nil {
					err = p.client.Patch(ctx, w.claim.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
				}
				if client.IgnoreNotFound(err) != nil {
					errs <- fmt.Errorf("recording the pods nominated to NodeClaim %s: %w", w.claim.Name, err)
				}
			}
		})
	}
	for _, w := range writes {
		work <- w
	}
	close(work)
	wg.Wait()
	close(errs)
	var first error
	for err := range errs {
		if first == nil {
			first = err
		}
	}
	return first
}
