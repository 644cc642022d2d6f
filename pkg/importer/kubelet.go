package importer

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
)

// poolKubelet is a NodePool made by the import and the kubelet settings
// its Karpenter pool had at pool level (v1beta1's
// spec.template.spec.kubelet, v1alpha5's spec.kubeletConfiguration); nil
// when it had none.
type poolKubelet struct {
	where, path string
	pool        *v1alpha1.NodePool
	kubelet     *v1alpha1.KubeletConfiguration
}

// poolKubelet reads a pool's kubelet settings and records the pool for
// placeKubelets.
func (c *converter) poolKubelet(where string, s *karpenter.PoolSpec, np *v1alpha1.NodePool) error {
	k, path, notes, err := s.DecodeKubelet()
	if err != nil {
		return err
	}
	for _, n := range notes {
		c.warnf(where, "%s", n)
	}
	c.pools = append(c.pools, poolKubelet{where: where, path: path, pool: np, kubelet: k})
	return nil
}

// placeKubelets moves pool-level kubelet settings to the EC2NodeClass each
// pool references, where Karpenter v1 keeps them. Pools that share a class
// but not their settings (a pool without settings counts as one more
// setting) split it: the first pool's group keeps the class, every other
// group gets a copy named after its first pool, and a warning says so.
func (c *converter) placeKubelets() {
	byClass := map[string][]*poolKubelet{}
	var order []string
	for i := range c.pools {
		p := &c.pools[i]
		ref := p.pool.Spec.Template.Spec.NodeClassRef
		if ref.Kind != "" && ref.Kind != "EC2NodeClass" {
			continue
		}
		if _, ok := byClass[ref.Name]; !ok {
			order = append(order, ref.Name)
		}
		byClass[ref.Name] = append(byClass[ref.Name], p)
	}
	for _, name := range order {
		pools := byClass[name]
		if !slices.ContainsFunc(pools, func(p *poolKubelet) bool { return p.kubelet != nil }) {
			continue // nothing to move
		}
		ci := slices.IndexFunc(c.res.Objects, func(o runtime.Object) bool {
			nc, ok := o.(*v1alpha1.EC2NodeClass)
			return ok && nc.Name == name
		})
		if ci < 0 {
			for _, p := range pools {
				if p.kubelet != nil {
					c.warnf(p.where, "%s dropped: its EC2NodeClass %q is not in the input; set the settings as that class's spec.kubelet", p.path, name)
				}
			}
			continue
		}
		class := c.res.Objects[ci].(*v1alpha1.EC2NodeClass)
		// Group the pools by their settings, in input order.
		var groups [][]*poolKubelet
		for _, p := range pools {
			gi := slices.IndexFunc(groups, func(g []*poolKubelet) bool { return reflect.DeepEqual(g[0].kubelet, p.kubelet) })
			if gi < 0 {
				groups = append(groups, nil)
				gi = len(groups) - 1
			}
			groups[gi] = append(groups[gi], p)
		}
		original := class.DeepCopy()
		for gi, g := range groups {
			target := class
			if gi > 0 {
				target = original.DeepCopy()
				target.Name = c.freeClassName(name + "-" + g[0].pool.Name)
				c.seen["EC2NodeClass/"+target.Name] = g[0].where
				c.res.Objects = slices.Insert(c.res.Objects, ci+gi, runtime.Object(target))
				names := make([]string, len(g))
				for i, p := range g {
					p.pool.Spec.Template.Spec.NodeClassRef.Name = target.Name
					names[i] = fmt.Sprintf("%q", p.pool.Name)
				}
				c.warnf(g[0].where, "EC2NodeClass %q split: NodePool %s has other kubelet settings than NodePool %q, which shares it; NodePool %s now uses EC2NodeClass %q, a copy with its own settings",
					name, names[0], groups[0][0].pool.Name, strings.Join(names, ", "), target.Name)
			}
			k := g[0].kubelet
			if k == nil {
				// A pool without settings keeps the class's own (v1 classes).
				continue
			}
			if target.Spec.Kubelet != nil && !reflect.DeepEqual(target.Spec.Kubelet, k) {
				c.warnf(g[0].where, "%s replaces EC2NodeClass %q's own spec.kubelet", g[0].path, target.Name)
			}
			target.Spec.Kubelet = k.DeepCopy()
			for _, p := range g {
				c.warnf(p.where, "%s moved to EC2NodeClass %q spec.kubelet, where Karpenter v1 keeps it", p.path, target.Name)
			}
		}
	}
}

// freeClassName returns name, or name with a number appended, that no
// EC2NodeClass made so far has.
func (c *converter) freeClassName(name string) string {
	candidate := name
	for i := 2; ; i++ {
		if _, taken := c.seen["EC2NodeClass/"+candidate]; !taken {
			return candidate
		}
		candidate = fmt.Sprintf("%s-%d", name, i)
	}
}
