package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// RightsizeNodePools, RightsizeNodeClaims and RightsizeCommitments are
// the resources of our own operator, read (never written) when their CRDs
// are installed.
var (
	RightsizeNodePools   = v1alpha1.SchemeGroupVersion.WithResource("nodepools")
	RightsizeNodeClaims  = v1alpha1.SchemeGroupVersion.WithResource("nodeclaims")
	RightsizeCommitments = v1alpha1.SchemeGroupVersion.WithResource("commitments")
)

// Pool owners, the values of Cluster.PoolOwners.
const (
	OwnerKarpenter = "karpenter.sh"
	OwnerRightsize = v1alpha1.Group
)

// Rightsize is what a cluster run by the rightsize operator adds to a
// Cluster: its NodePools and NodeClaims as the API server returned them,
// and the Nodes, for the operator's disruption guards.
type Rightsize struct {
	// Installed reports whether the rightsize.dev/v1alpha1 NodePool CRD exists.
	Installed bool
	// Pools are the rightsize.dev NodePools that are not being deleted, by
	// name; they are also in Manifests.Pools.
	Pools map[string]*v1alpha1.NodePool
	// Claims are every rightsize.dev NodeClaim.
	Claims []v1alpha1.NodeClaim
	// NodeObjects are the Nodes as read, in the order of Cluster.Nodes.
	NodeObjects []corev1.Node
}

// addRightsizePools converts our NodePools as the provisioner does: the
// Karpenter-shaped fields, plus the labels every node of the pool carries
// (rightsize.dev/nodepool). A pool named like a Karpenter one replaces it,
// with a warning: the solver keys pools by name.
func (c *Cluster) addRightsizePools(pools []*v1alpha1.NodePool) {
	for _, np := range pools {
		if np.DeletionTimestamp != nil {
			continue
		}
		raw, err := json.Marshal(np)
		if err != nil {
			c.warnf("NodePool "+np.Name, "left out: %v", err)
			continue
		}
		if i := slices.IndexFunc(c.Pools, func(p solver.Pool) bool { return p.Name == np.Name }); i >= 0 && c.PoolOwners[np.Name] == OwnerKarpenter {
			c.warnf("NodePool "+np.Name, "both karpenter.sh and rightsize.dev have a NodePool of this name; only the rightsize.dev one is planned")
			c.Pools = slices.Delete(c.Pools, i, i+1)
		}
		n := len(c.Pools)
		if !c.addPoolJSON(raw, OwnerRightsize) {
			continue // left out, with a warning
		}
		if len(c.Pools) > n { // a static pool is not planned (addPool)
			maps.Copy(c.Pools[n].Labels, np.NodeLabels())
		}
		if c.Rightsize.Pools == nil {
			c.Rightsize.Pools = map[string]*v1alpha1.NodePool{}
		}
		c.Rightsize.Pools[np.Name] = np
	}
}

// addClaims applies what the NodeClaims say of the nodes they launched:
// the price paid, the pool that owns the node, whether it has initialized
// (a node still initializing is in flight: the planner moves no pod onto it
// and budgets do not count it); and a rightsize pool's usage is the
// capacity of its NodeClaims, launched or not, as the operator counts it.
func (c *Cluster) addClaims(claims []v1alpha1.NodeClaim) {
	byProviderID := make(map[string]*v1alpha1.NodeClaim, len(claims))
	usage := map[string]solver.Resources{}
	for i := range claims {
		cl := &claims[i]
		if id := cl.Status.ProviderID; id != "" {
			byProviderID[id] = cl
		}
		usage[cl.Labels[v1alpha1.LabelNodePool]] = usage[cl.Labels[v1alpha1.LabelNodePool]].Add(c.known(cl.Status.Capacity))
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		id := c.Rightsize.NodeObjects[i].Spec.ProviderID
		cl := byProviderID[id]
		if id == "" || cl == nil {
			continue
		}
		if price, err := strconv.ParseFloat(cl.Status.PricePerHour, 64); err == nil && price > 0 {
			n.Price = price
		}
		if pool := cl.Labels[v1alpha1.LabelNodePool]; pool != "" {
			n.Pool = pool
		}
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha1.ConditionInitialized) {
			n.InFlight = true
		}
		if n.InstanceType == "" {
			n.InstanceType = cl.Status.InstanceType
		}
	}
	for pi := range c.Pools {
		if c.PoolOwners[c.Pools[pi].Name] == OwnerRightsize {
			c.Pools[pi].Used = usage[c.Pools[pi].Name]
		}
	}
}

// InFlightClaims returns the NodeClaims whose node has not registered yet,
// by name, for reports.
func (r *Rightsize) InFlightClaims() []string {
	registered := map[string]bool{}
	for i := range r.NodeObjects {
		if id := r.NodeObjects[i].Spec.ProviderID; id != "" {
			registered[id] = true
		}
	}
	var out []string
	for i := range r.Claims {
		cl := &r.Claims[i]
		if cl.DeletionTimestamp == nil && (cl.Status.ProviderID == "" || !registered[cl.Status.ProviderID]) {
			out = append(out, fmt.Sprintf("%s (%s)", cl.Name, cl.Labels[v1alpha1.LabelNodePool]))
		}
	}
	return out
}

// decodeRightsize reads this project's own NodePool, EC2NodeClass and
// SimNodeClass from manifests, strictly (an unknown field is an error, as
// the API server's schema makes it one): a NodePool plans as its live twin
// does, with the labels every node of the pool carries; a node class gives
// the pools that reference it its kubelet settings.
func (m *Manifests) decodeRightsize(where, kind string, j []byte, generic any) error {
	var (
		name    string
		kubelet *v1alpha1.KubeletConfiguration
	)
	switch kind {
	case "NodePool":
		var np v1alpha1.NodePool
		if err := m.decodeFields(j, &np, generic); err != nil {
			return err
		}
		raw, err := json.Marshal(&np)
		if err != nil {
			return err
		}
		var o karpenterPool
		if err := json.Unmarshal(raw, &o); err != nil {
			return err
		}
		n := len(m.Pools)
		if err := m.addPool(where, kind, &o); err != nil {
			return err
		}
		maps.Copy(m.Pools[n].Labels, np.NodeLabels())
		return nil
	case "EC2NodeClass":
		var c v1alpha1.EC2NodeClass
		if err := m.decodeFields(j, &c, generic); err != nil {
			return err
		}
		name, kubelet = c.Name, c.Spec.Kubelet
		for _, bdm := range c.Spec.BlockDeviceMappings {
			if bdm.RootVolume && bdm.EBS != nil {
				m.setClassStorage(classKey{v1alpha1.Group, kind, name}, classStorage(nil, bdm.EBS.VolumeSize))
				break
			}
		}
	default:
		var c v1alpha1.SimNodeClass
		if err := m.decodeFields(j, &c, generic); err != nil {
			return err
		}
		name, kubelet = c.Name, c.Spec.Kubelet
	}
	if name == "" {
		return errors.New("metadata.name is required")
	}
	var raw json.RawMessage
	if kubelet != nil {
		var err error
		if raw, err = json.Marshal(kubelet); err != nil {
			return err
		}
	}
	if err := m.setClassKubelet(where, classKey{v1alpha1.Group, kind, name}, raw); err != nil {
		return err
	}
	m.NodeClasses = append(m.NodeClasses, name)
	return nil
}

// decodeCommitment reads a Commitment, refusing one the API server would
// refuse.
func (m *Manifests) decodeCommitment(j []byte, generic any) error {
	var c v1alpha1.Commitment
	if err := m.decodeFields(j, &c, generic); err != nil {
		return err
	}
	if c.Name == "" {
		return errors.New("metadata.name is required")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	m.Commitments = append(m.Commitments, c)
	return nil
}

// addCommitments reads the cluster's Commitments as explain -f reads them
// from manifests; one the API server's rules would refuse is left out with
// a warning.
func (c *Cluster) addCommitments(raws []json.RawMessage) {
	for _, raw := range raws {
		var cm v1alpha1.Commitment
		if err := json.Unmarshal(raw, &cm); err != nil {
			c.warnf("Commitment", "left out: %v", err)
			continue
		}
		if err := cm.Validate(); err != nil {
			c.warnf("Commitment "+cm.Name, "left out: %v", err)
			continue
		}
		c.Manifests.Commitments = append(c.Manifests.Commitments, cm)
	}
}
