// Package importer converts Karpenter manifests into rightsize.dev/v1alpha1
// objects: karpenter.sh/v1alpha5 Provisioners (including the seed article's
// hybrid with spec.template), karpenter.sh/v1beta1 and v1 NodePools,
// karpenter.k8s.aws/v1beta1 and v1 EC2NodeClasses (and the seed's
// EC2NodeClass filed under karpenter.sh/v1alpha5) and karpenter.k8s.aws
// v1alpha1 AWSNodeTemplates, including one inline in a Provisioner's
// spec.provider.
//
// What carries over unchanged is converted silently; what changes meaning,
// moves or is dropped is converted as Karpenter's own migration would and
// reported as a warning, one line each, naming the document and the field.
// Workloads keep scheduling: a NodePool made from a Provisioner named X gets
// the template label karpenter.sh/provisioner-name: X, and the operator puts
// karpenter.sh/nodepool: NAME on every node of every pool (see
// v1alpha1.KarpenterLabelNodePool).
package importer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/karpenter"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// Result is what Import converted.
type Result struct {
	// Objects are *v1alpha1.NodePool and *v1alpha1.EC2NodeClass, in input
	// order (an EC2NodeClass made from a Provisioner's inline provider comes
	// just before its NodePool).
	Objects []runtime.Object
	// Warnings are one line each, e.g. "pools.yaml: document 2: Provisioner
	// \"default\": spec.ttlSecondsAfterEmpty: 30 became ...".
	Warnings []string
}

// Import reads paths (files, directories or "-" for stdin) and converts the
// Karpenter objects in them. Other kinds are skipped with a warning. It
// fails on input it cannot read faithfully (malformed YAML, unknown fields of
// Karpenter kinds, values that cannot be converted) and when the input holds
// no Karpenter object.
func Import(paths []string, stdin io.Reader) (*Result, error) {
	return ImportInput(context.Background(), snapshot.Input{Filenames: paths}, stdin)
}

// ImportInput is Import reading in's files (-f) through its size limit and
// stopping once ctx ends.
func ImportInput(ctx context.Context, in snapshot.Input, stdin io.Reader) (*Result, error) {
	paths := in.Filenames
	docs, err := in.Documents(ctx, stdin)
	if err != nil {
		return nil, err
	}
	c := &converter{seen: map[string]string{}}
	for i := range docs {
		d := &docs[i]
		if err := c.object(d.Where(), d.JSON, false); err != nil {
			return nil, d.Errorf(err)
		}
	}
	c.placeKubelets()
	if len(c.res.Objects) == 0 {
		shown := make([]string, len(paths))
		for i, p := range paths {
			shown[i] = p
			if p == "-" {
				shown[i] = "<stdin>"
			}
		}
		return nil, fmt.Errorf("no Karpenter Provisioner, NodePool, EC2NodeClass or AWSNodeTemplate in %s", strings.Join(shown, ", "))
	}
	return &c.res, nil
}

// converter accumulates the converted objects and warnings.
type converter struct {
	res  Result
	seen map[string]string // "Kind/name" -> where it was made
	// pools are the NodePools made, with the pool-level kubelet settings
	// of v1beta1 and v1alpha5 that placeKubelets moves to their classes.
	pools []poolKubelet
}

func (c *converter) warnf(where, format string, args ...any) {
	c.res.Warnings = append(c.res.Warnings, where+": "+fmt.Sprintf(format, args...))
}

// add records a converted object, refusing two of the same kind and name.
func (c *converter) add(where string, obj runtime.Object, kind, name string) error {
	key := kind + "/" + name
	if prev, ok := c.seen[key]; ok {
		return fmt.Errorf("%s %q was already made from %s; rename one of them", kind, name, prev)
	}
	c.seen[key] = where
	c.res.Objects = append(c.res.Objects, obj)
	return nil
}

// header is what dispatching a document needs.
type header struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   struct{ Name any } `json:"metadata"`
	Items      []json.RawMessage  `json:"items"`
}

// object converts one document or List item.
func (c *converter) object(where string, j []byte, inList bool) error {
	if strings.TrimSpace(string(j)) == "null" {
		return nil
	}
	var h header
	if err := json.Unmarshal(j, &h); err != nil {
		return fmt.Errorf("expected a Kubernetes object: %w", err)
	}
	if h.Kind == "" {
		return errors.New("kind is missing")
	}
	label := h.Kind
	if name, ok := h.Metadata.Name.(string); ok && name != "" {
		label = fmt.Sprintf("%s %q", h.Kind, name)
	}
	switch {
	case h.Kind == "List" && !inList:
		for i, item := range h.Items {
			if err := c.object(fmt.Sprintf("%s: items[%d]", where, i), item, true); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	case h.APIVersion == v1alpha1.SchemeGroupVersion.String():
		c.warnf(where, "%s skipped: already %s", label, h.APIVersion)
		return nil
	}
	var err error
	switch k := h.Kind + " " + h.APIVersion; k {
	case "Provisioner " + karpenter.V1Alpha5,
		"NodePool " + karpenter.V1Beta1,
		"NodePool " + karpenter.V1:
		err = c.pool(where, h.Kind, h.APIVersion, j)
	case "EC2NodeClass " + karpenter.AWSV1Beta1,
		"EC2NodeClass " + karpenter.AWSV1,
		"EC2NodeClass " + karpenter.V1Alpha5:
		err = c.ec2NodeClass(where, h.APIVersion, j)
	case "AWSNodeTemplate " + karpenter.AWSV1Alpha1:
		err = c.awsNodeTemplate(where, j)
	case "NodeClaim " + karpenter.V1, "NodeClaim " + karpenter.V1Beta1:
		c.warnf(where, "%s skipped: Karpenter makes NodeClaims from NodePools, and so does the operator; import the NodePool it came from", label)
		return nil
	case "NodeOverlay " + karpenter.V1Alpha1:
		c.warnf(where, "%s skipped: rightsize.dev has no NodeOverlay; keep it as it is: explain -f reads it beside the NodePools, and live explain and the operator read it from the cluster (karpenter.sh/v1alpha1 nodeoverlays)", label)
		return nil
	default:
		switch h.Kind {
		case karpenter.KindProvisioner, karpenter.KindNodePool, karpenter.KindEC2NodeClass, karpenter.KindAWSNodeTemplate:
			c.warnf(where, "%s skipped: apiVersion %s is not one import reads", label, h.APIVersion)
		default:
			c.warnf(where, "%s skipped: not a Karpenter kind", label)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	return nil
}
