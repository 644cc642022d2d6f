package snapshot

import (
	"context"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Volumes are the storage objects of a cluster that decide where pods
// with volumes may run (kube-scheduler's VolumeBinding, VolumeZone and
// NodeVolumeLimits filters).
type Volumes struct {
	// Claims are the PersistentVolumeClaims of the namespaces pods were
	// read from.
	Claims         []*corev1.PersistentVolumeClaim
	Volumes        []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
	// CSINodes give existing nodes' attach limits; a node without one is
	// not limited.
	CSINodes []*storagev1.CSINode
}

// readVolumes lists what Volumes holds, PersistentVolumeClaims in
// namespace ns ("" for all, falling back to ClusterOptions.Namespace as
// pods do). CSINodes are optional: an error listing them
// is returned apart, so that volumes still constrain pods.
func (r *reader) readVolumes(ctx context.Context, ns string) (*Volumes, error, error) {
	v := &Volumes{}
	claims, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]corev1.PersistentVolumeClaim, string, error) {
			l, err := r.Kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil && apierrors.IsForbidden(err) && ns == "" && r.opts.Namespace != "" {
		return r.readVolumes(ctx, r.opts.Namespace)
	}
	if err != nil {
		return nil, r.apiError("list", "persistentvolumeclaims", ns, err), nil
	}
	pvs, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]corev1.PersistentVolume, string, error) {
			l, err := r.Kube.CoreV1().PersistentVolumes().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return nil, r.apiError("list", "persistentvolumes", "", err), nil
	}
	classes, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]storagev1.StorageClass, string, error) {
			l, err := r.Kube.StorageV1().StorageClasses().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return nil, r.apiError("list", "storageclasses.storage.k8s.io", "", err), nil
	}
	v.Claims, v.Volumes, v.StorageClasses = pointers(claims), pointers(pvs), pointers(classes)
	csiNodes, err := listAll(ctx, r.opts.PageSize, metav1.ListOptions{},
		func(ctx context.Context, o metav1.ListOptions) ([]storagev1.CSINode, string, error) {
			l, err := r.Kube.StorageV1().CSINodes().List(ctx, o)
			if err != nil {
				return nil, "", err
			}
			return l.Items, l.Continue, nil
		})
	if err != nil {
		return v, nil, r.apiError("list", "csinodes.storage.k8s.io", "", err)
	}
	v.CSINodes = pointers(csiNodes)
	return v, nil, nil
}

// setVolumes makes the cluster's storage objects the ones pods' volumes
// are resolved against; nil leaves pods planned as if they had no volume.
func (c *Cluster) setVolumes(v *Volumes) {
	if v == nil {
		return
	}
	c.volumes = volumeObjects{live: true}
	for _, o := range v.Claims {
		c.volumes.addClaim(o)
	}
	for _, o := range v.Volumes {
		c.volumes.addVolume(o)
	}
	for _, o := range v.StorageClasses {
		c.volumes.addClass(o)
	}
	c.csiLimits = map[string]int64{}
	for _, n := range v.CSINodes {
		for _, d := range n.Spec.Drivers {
			if d.Name == EBSDriver && d.Allocatable != nil && d.Allocatable.Count != nil {
				c.csiLimits[n.Name] = int64(*d.Allocatable.Count)
			}
		}
	}
}

// podVolumes applies to a pending pod what its volumes need.
func (c *Cluster) podVolumes(pod *corev1.Pod, p *solver.Pod) error {
	if c.volumes.live {
		return c.applyVolumes(p, c.volumes.needs(pod.Namespace, podClaims(pod.Name, &pod.Spec, nil)))
	}
	return nil
}

// boundVolumes applies to a bound pod where its volumes let it move
// (consolidation must not move a pod away from its volume's zone) and,
// when pending pods made the attach limit a resource, the EBS volumes it
// holds on its node.
func (c *Cluster) boundVolumes(pod *corev1.Pod, p *solver.Pod) {
	if !c.volumes.live {
		return
	}
	n := c.volumes.needs(pod.Namespace, podClaims(pod.Name, &pod.Spec, nil))
	for _, alternatives := range n.terms {
		p.Affinity = andTerms(p.Affinity, alternatives)
	}
	if i := slices.Index(c.ExtendedResources, EBSAttachResource); i >= 0 {
		p.Requests[solver.NumFixedResources+i] += n.ebs
	}
}

// nodeAttachLimits sets every existing node's EBSAttachResource
// allocatable, when pending pods request it: the EBS driver's count in
// the node's CSINode, else no limit (kube-scheduler limits only what
// CSINode reports).
func (c *Cluster) nodeAttachLimits() {
	i := slices.Index(c.ExtendedResources, EBSAttachResource)
	if i < 0 {
		return
	}
	for ni := range c.Nodes {
		limit, ok := c.csiLimits[c.Nodes[ni].Name]
		if !ok {
			limit = math.MaxInt32
		}
		c.Nodes[ni].Allocatable[solver.NumFixedResources+i] = limit
	}
}
