package snapshot

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/solver"
)

// Volume drivers, labels and the attach limit modelled for them.
const (
	// EBSDriver is the AWS EBS CSI driver; in-tree kubernetes.io/aws-ebs
	// volumes are migrated to it (CSI migration), so they count as its.
	EBSDriver       = "ebs.csi.aws.com"
	inTreeEBS       = "kubernetes.io/aws-ebs"
	LabelEBSZone    = "topology.ebs.csi.aws.com/zone"
	LabelRegionBeta = "failure-domain.beta.kubernetes.io/region"
	// EBSAttachResource is the extended resource a pod requests once per
	// distinct EBS volume it mounts, and every node offers up to its attach
	// limit: kube-scheduler's NodeVolumeLimits filter, as a resource. The
	// name is the one kube-scheduler gave CSI limits in node allocatable
	// before CSINode carried them.
	EBSAttachResource = "attachable-volumes-csi-" + EBSDriver
	// EBSAttachLimit is the EBS volumes a new node may attach. The EBS CSI
	// driver (kubernetes-sigs/aws-ebs-csi-driver, pkg/driver/node.go
	// getVolumesLimit) reports, for a Nitro instance, the 28 attachments
	// Nitro shares between EBS volumes, network interfaces and NVMe
	// instance-store disks, less the root volume and the interfaces
	// attached when the driver starts: 28 - 1 root - 1 primary ENI = 26.
	// Simplification: every instance type gets 26; the types with their
	// own dedicated EBS limit, instance-store disks or extra block device
	// mappings, and non-Nitro types (39), are not told apart.
	EBSAttachLimit = 26
	// annotationDefaultClass marks the default StorageClass.
	annotationDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annotationDefaultClassBeta = "storageclass.beta.kubernetes.io/is-default-class"
)

// volumeObjects are the PersistentVolumeClaims, PersistentVolumes and
// StorageClasses pods' volumes are resolved against.
type volumeObjects struct {
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// live is set for a cluster: an object it lacks does not exist. In
	// manifests it may merely be outside the input.
	live bool
}

func (v *volumeObjects) addClaim(c *corev1.PersistentVolumeClaim) {
	if v.claims == nil {
		v.claims = map[string]*corev1.PersistentVolumeClaim{}
	}
	ns := c.Namespace
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	v.claims[ns+"/"+c.Name] = c
}

func (v *volumeObjects) addVolume(pv *corev1.PersistentVolume) {
	if v.volumes == nil {
		v.volumes = map[string]*corev1.PersistentVolume{}
	}
	v.volumes[pv.Name] = pv
}

func (v *volumeObjects) addClass(sc *storagev1.StorageClass) {
	if v.classes == nil {
		v.classes = map[string]*storagev1.StorageClass{}
	}
	v.classes[sc.Name] = sc
}

// defaultClass is the StorageClass marked default, or nil: the newest
// when several are, as the API server's admission picks it, the first by
// name on a tie.
func (v *volumeObjects) defaultClass() *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for _, sc := range v.classes {
		if sc.Annotations[annotationDefaultClass] != "true" && sc.Annotations[annotationDefaultClassBeta] != "true" {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name {
			best = sc
		}
	}
	return best
}

// volumeNeeds is what a pod's volumes ask of its node.
type volumeNeeds struct {
	// terms are, per volume that restricts where the pod runs, the node
	// selector terms one of which the node must match: ANDed across
	// volumes, ORed within one.
	terms [][]solver.Term
	// ebs counts the distinct EBS volumes the node must attach.
	ebs int64
	// pending, when set, is why the pod cannot be scheduled at all yet.
	pending string
}

// claimUse is one claim a pod mounts: by name, or, when template is set,
// made from a template (a StatefulSet volumeClaimTemplate or a generic
// ephemeral volume) when it does not exist yet.
type claimUse struct {
	name     string
	template *corev1.PersistentVolumeClaimSpec
}

// podClaims lists the claims a pod mounts: its persistentVolumeClaim and
// ephemeral volumes (whose claim is named <pod>-<volume>), and, for a
// StatefulSet's pod, the claims its volumeClaimTemplates make
// (<template>-<pod>).
func podClaims(podName string, spec *corev1.PodSpec, templates []corev1.PersistentVolumeClaim) []claimUse {
	var out []claimUse
	add := func(c claimUse) { // a claim mounted twice is one volume
		if !slices.ContainsFunc(out, func(o claimUse) bool { return o.name == c.name }) {
			out = append(out, c)
		}
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			add(claimUse{name: v.PersistentVolumeClaim.ClaimName})
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			add(claimUse{name: podName + "-" + v.Name, template: &v.Ephemeral.VolumeClaimTemplate.Spec})
		}
	}
	for i := range templates {
		add(claimUse{name: templates[i].Name + "-" + podName, template: &templates[i].Spec})
	}
	return out
}

// needs resolves the claims of a pod in namespace ns the way
// kube-scheduler's VolumeBinding, VolumeZone and NodeVolumeLimits filters
// read them: a bound claim's PersistentVolume pins the node through its
// node affinity and zone labels; an unbound WaitForFirstConsumer claim
// through its StorageClass's allowedTopologies; an unbound Immediate
// claim, a missing claim or a claim bound to a missing volume leaves the
// pod pending. Only EBS volumes count against the attach limit.
func (v *volumeObjects) needs(ns string, claims []claimUse) volumeNeeds {
	var n volumeNeeds
	for _, use := range claims {
		c := v.claims[ns+"/"+use.name]
		var spec *corev1.PersistentVolumeClaimSpec
		switch {
		case c != nil && c.DeletionTimestamp != nil:
			n.pending = fmt.Sprintf("PVC %s is being deleted", use.name)
		case c != nil:
			spec = &c.Spec
		case use.template != nil:
			spec = use.template // made when the pod is created, unbound
		case v.live:
			n.pending = fmt.Sprintf("persistentvolumeclaim %q not found", use.name)
		default:
			n.pending = fmt.Sprintf("persistentvolumeclaim %q not found in the input; add it (and its PersistentVolume, if bound) to plan the pod", use.name)
		}
		if n.pending != "" {
			return n
		}
		var terms []solver.Term
		ebs := false
		if spec.VolumeName != "" {
			pv := v.volumes[spec.VolumeName]
			if pv == nil {
				n.pending = fmt.Sprintf("PVC %s is bound to PersistentVolume %s, which does not exist", use.name, spec.VolumeName)
				if !v.live {
					n.pending = fmt.Sprintf("PVC %s is bound to PersistentVolume %s, which is not in the input; add it to plan the pod", use.name, spec.VolumeName)
				}
				return n
			}
			var err error
			if terms, err = volumeTerms(pv); err != nil {
				n.pending = fmt.Sprintf("PersistentVolume %s of PVC %s cannot be read: %v", pv.Name, use.name, err)
				return n
			}
			ebs = pv.Spec.AWSElasticBlockStore != nil || pv.Spec.CSI != nil && pv.Spec.CSI.Driver == EBSDriver
		} else {
			var why string
			terms, ebs, why = v.unboundTerms(use.name, spec)
			if why != "" {
				n.pending = why
				return n
			}
		}
		if len(terms) > 0 {
			n.terms = append(n.terms, terms)
		}
		if ebs {
			n.ebs++
		}
	}
	return n
}

// unboundTerms reads an unbound claim: where its StorageClass may
// provision it, whether the class's provisioner is EBS, or why the pod
// must wait.
func (v *volumeObjects) unboundTerms(name string, spec *corev1.PersistentVolumeClaimSpec) ([]solver.Term, bool, string) {
	var sc *storagev1.StorageClass
	switch {
	case spec.StorageClassName == nil:
		sc = v.defaultClass()
		if sc == nil && v.live {
			return nil, false, fmt.Sprintf("PVC %s is not bound yet and names no StorageClass, and the cluster has no default one to provision it", name)
		}
	case *spec.StorageClassName == "":
		return nil, false, fmt.Sprintf("PVC %s is not bound yet and its storageClassName is \"\": only a matching PersistentVolume can bind it", name)
	default:
		sc = v.classes[*spec.StorageClassName]
		if sc == nil && v.live {
			return nil, false, fmt.Sprintf("PVC %s is not bound yet and its StorageClass %s does not exist (storageclass.storage.k8s.io %q not found)", name, *spec.StorageClassName, *spec.StorageClassName)
		}
	}
	if sc == nil {
		// Offline, a class outside the input: planned as a
		// WaitForFirstConsumer class provisioning in any zone (EKS's gp2
		// and the EBS driver's own examples are).
		return nil, false, ""
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate {
		return nil, false, fmt.Sprintf("PVC %s is not bound yet (StorageClass %s binds Immediately)", name, sc.Name)
	}
	var terms []solver.Term
	for _, t := range sc.AllowedTopologies {
		var term solver.Term
		for _, e := range t.MatchLabelExpressions {
			term = append(term, solver.Requirement{Key: volumeKey(e.Key), Operator: solver.OpIn, Values: slices.Clone(e.Values)})
		}
		if len(term) > 0 {
			terms = append(terms, term)
		}
	}
	return terms, sc.Provisioner == EBSDriver || sc.Provisioner == inTreeEBS, ""
}

// volumeTerms are the node selector terms a bound PersistentVolume allows:
// its spec.nodeAffinity (VolumeBinding), each ANDed with its zone and
// region labels (VolumeZone, whose values may list several zones joined
// by "__").
func volumeTerms(pv *corev1.PersistentVolume) ([]solver.Term, error) {
	var labels solver.Term
	for _, key := range []string{solver.LabelZone, LabelZoneBeta, LabelRegion, LabelRegionBeta} {
		if val, ok := pv.Labels[key]; ok && val != "" {
			labels = append(labels, solver.Requirement{Key: volumeKey(key), Operator: solver.OpIn, Values: strings.Split(val, "__")})
		}
	}
	var terms []solver.Term
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		for i, t := range na.Required.NodeSelectorTerms {
			if len(t.MatchExpressions) == 0 {
				continue // matchFields only (a node name): not modelled
			}
			term := slices.Clone(labels)
			for k, e := range t.MatchExpressions {
				path := fmt.Sprintf("spec.nodeAffinity.required.nodeSelectorTerms[%d].matchExpressions[%d]", i, k)
				r, err := nodeRequirement(path, volumeKey(e.Key), string(e.Operator), e.Values)
				if err != nil {
					return nil, err
				}
				term = append(term, r)
			}
			terms = append(terms, term)
		}
	}
	if len(terms) == 0 && len(labels) > 0 {
		terms = []solver.Term{labels}
	}
	return terms, nil
}

// volumeKey is the node label a volume's topology key means: the EBS
// driver's zone key is the zone (as Karpenter normalises it, in its
// volumetopology.go), and deprecated keys their current names.
func volumeKey(key string) string {
	if key == LabelEBSZone {
		return solver.LabelZone
	}
	if key == LabelRegionBeta {
		return LabelRegion
	}
	return solver.NormalizeLabelKey(key)
}

// applyVolumes adds what a pod's volumes need to the pod: the volumes'
// terms ANDed into its node affinity, one EBSAttachResource per EBS
// volume, or the reason it stays pending.
func (m *Manifests) applyVolumes(p *solver.Pod, n volumeNeeds) error {
	if n.pending != "" {
		p.Unschedulable = n.pending
		return nil
	}
	for _, alternatives := range n.terms {
		p.Affinity = andTerms(p.Affinity, alternatives)
	}
	if n.ebs > 0 {
		i := slices.Index(m.ExtendedResources, EBSAttachResource)
		if i < 0 {
			// Not through m.index: the name has no domain prefix, like
			// kube-scheduler's own attachable-volumes-* resources.
			if len(m.ExtendedResources) >= solver.MaxResources-solver.NumFixedResources {
				return fmt.Errorf("counting EBS volumes: at most %d extended resources are supported (already have %s)",
					solver.MaxResources-solver.NumFixedResources, strings.Join(m.ExtendedResources, ", "))
			}
			i = len(m.ExtendedResources)
			m.ExtendedResources = append(m.ExtendedResources, EBSAttachResource)
		}
		p.Requests[solver.NumFixedResources+i] += n.ebs
	}
	return nil
}

// andTerms is (a1 OR a2 ...) AND (b1 OR b2 ...) as an OR of terms: every
// pair's requirements together. No a means no node affinity yet.
func andTerms(a, b []solver.Term) []solver.Term {
	if len(a) == 0 {
		return cloneTerms(b)
	}
	out := make([]solver.Term, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			t := make(solver.Term, 0, len(x)+len(y))
			t = append(t, x...)
			t = append(t, y...)
			out = append(out, cloneTerms([]solver.Term{t})[0])
		}
	}
	return out
}

// volumeUser is a run of Manifests.Pods, made from one pod spec, whose
// volumes are resolved once the whole input is read (claims and volumes
// may come after the pods that use them).
type volumeUser struct {
	from, to  int // m.Pods[from:to]
	spec      *corev1.PodSpec
	templates []corev1.PersistentVolumeClaim // a StatefulSet's volumeClaimTemplates
}

// useVolumes records that m.Pods[from:to] are made from spec, if spec or
// templates use any claim.
func (m *Manifests) useVolumes(from, to int, spec *corev1.PodSpec, templates []corev1.PersistentVolumeClaim) {
	if from >= to || len(templates) == 0 && !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil || v.Ephemeral != nil
	}) {
		return
	}
	m.volumeUsers = append(m.volumeUsers, volumeUser{from: from, to: to, spec: spec, templates: templates})
}

// resolveVolumes applies what each recorded pod's volumes need.
func (m *Manifests) resolveVolumes() error {
	for _, u := range m.volumeUsers {
		for i := u.from; i < u.to; i++ {
			p := &m.Pods[i]
			if err := m.applyVolumes(p, m.volumes.needs(p.Namespace, podClaims(p.Name, u.spec, u.templates))); err != nil {
				return fmt.Errorf("pod %s: %w", p.Key(), err)
			}
		}
	}
	m.volumeUsers = nil
	return nil
}

// decodeVolumeObject reads a PersistentVolumeClaim, PersistentVolume or
// StorageClass document.
func (m *Manifests) decodeVolumeObject(kind string, j []byte, generic any) error {
	switch kind {
	case "PersistentVolumeClaim":
		o := &corev1.PersistentVolumeClaim{}
		if err := m.decodeFields(j, o, generic); err != nil {
			return err
		}
		m.volumes.addClaim(o)
	case "PersistentVolume":
		o := &corev1.PersistentVolume{}
		if err := m.decodeFields(j, o, generic); err != nil {
			return err
		}
		m.volumes.addVolume(o)
	case "StorageClass":
		o := &storagev1.StorageClass{}
		if err := m.decodeFields(j, o, generic); err != nil {
			return err
		}
		m.volumes.addClass(o)
	}
	return nil
}
