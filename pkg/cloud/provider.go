package cloud

import (
	"context"
	"errors"
	"fmt"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// CloudProvider launches and terminates the machines behind NodeClaims. The
// operator talks only to this interface; AWS (pkg/cloud/aws) and the
// simulator (pkg/cloud/sim) implement it. Every method is safe for
// concurrent use.
type CloudProvider interface {
	// Name is a short name for logs and metrics, e.g. "aws" or "sim".
	Name() string

	// Create launches one instance for the NodeClaim: the cheapest offering
	// that satisfies its requirements (instance type, zone and capacity type
	// requirements narrow the choice; the operator's claims allow every
	// offering that holds their pods, the planned one first) and its
	// resource requests, configured from the NodeClaim's node
	// class. It returns a copy of the NodeClaim whose status carries the
	// providerID, instance type, zone, capacity type, price, capacity and
	// allocatable, and whose labels carry the node's well-known labels.
	// A claim with AnnotationPriceOverlayApplied is launched on the first
	// offering it lists that has capacity (types in order, then capacity
	// types, then zones) rather than on the cheapest.
	//
	// Create must be idempotent per NodeClaim name: a retry after a crash
	// returns the instance already launched for it (providers tag instances
	// with the NodeClaim name and find them by tag) rather than a second one.
	//
	// Errors: *InsufficientCapacityError when no allowed offering could be
	// launched (the caller marks those offerings unavailable and re-plans);
	// *NodeClassNotReadyError when the node class cannot be resolved yet;
	// any other error is transient and retried.
	Create(ctx context.Context, claim *v1alpha1.NodeClaim) (*v1alpha1.NodeClaim, error)

	// Delete terminates the instance behind the NodeClaim's providerID. It
	// returns a *NotFoundError once the instance is gone, which the caller
	// treats as success.
	Delete(ctx context.Context, claim *v1alpha1.NodeClaim) error

	// Get returns the NodeClaim view (status and labels as Create fills
	// them) of a running instance, or a *NotFoundError.
	Get(ctx context.Context, providerID string) (*v1alpha1.NodeClaim, error)

	// List returns every instance this provider launched for this cluster,
	// for garbage collection of instances without a NodeClaim. Each view
	// is named after the NodeClaim the instance was launched for, carries
	// its NodePool label and, if it was launched with one,
	// AnnotationLaunchedDirectly.
	List(ctx context.Context) ([]*v1alpha1.NodeClaim, error)

	// InstanceTypes returns the instance types and offerings (with current
	// prices and availability) a NodePool's node class can launch.
	InstanceTypes(ctx context.Context, pool *v1alpha1.NodePool) ([]InstanceType, error)

	// IsDrifted returns why the launched NodeClaim's instance no longer
	// matches its node class, in one sentence, or "" when it still does.
	// Static drift: the class's launch settings changed since the launch
	// (Create stamps v1alpha1.AnnotationNodeClassHash and its version on
	// the claim it returns; a claim without them, or with another hash
	// version, never drifts this way). Dynamic drift: what the class's
	// selector terms resolve to now no longer includes the instance's
	// image, subnet or security groups. The operator calls it
	// periodically for every launched claim, so implementations answer
	// from caches and the class's resolved status rather than with API
	// calls per claim where they can.
	//
	// Errors: *NodeClassNotReadyError when the class cannot be read or
	// resolved now (drift is then unknown, not "no drift"); any other
	// error is transient.
	IsDrifted(ctx context.Context, claim *v1alpha1.NodeClaim) (string, error)
}

// AnnotationLaunchedDirectly is v1alpha1.AnnotationLaunchedDirectly: Create
// records the annotation of the NodeClaim it is given on the instance (a
// tag, a node annotation) and the views Get and List return carry it back,
// so that the operator's garbage collector adopts such an instance (creates
// its NodeClaim) instead of terminating it.
const AnnotationLaunchedDirectly = v1alpha1.AnnotationLaunchedDirectly

// AnnotationPriceOverlayApplied marks a NodeClaim whose instance types
// are listed by prices a NodeOverlay changed (a negotiated price the cloud
// does not know): the cloud launches the first listed offering that has
// capacity, as Karpenter's NodeClaim annotation
// v1alpha1.PriceOverlayAppliedAnnotationKey makes
// its AWS provider send CreateFleet a "prioritized" allocation strategy
// with each override's priority set from the overlaid price.
const AnnotationPriceOverlayApplied = v1alpha1.AnnotationPriceOverlayApplied

// InsufficientCapacityError says that none of the offerings tried could be
// launched now; Offerings lists them as "type/zone/capacity-type".
type InsufficientCapacityError struct {
	Offerings []string
	Err       error
}

func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity for %v: %v", e.Offerings, e.Err)
}

func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// NotFoundError says the instance does not exist (any more).
type NotFoundError struct{ ProviderID string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("instance %s not found", e.ProviderID) }

// NodeClassNotReadyError says the node class cannot be resolved yet (e.g. no
// subnet matches its selector terms); Reason is one sentence for events.
type NodeClassNotReadyError struct {
	NodeClass string
	Reason    string
}

func (e *NodeClassNotReadyError) Error() string {
	return fmt.Sprintf("node class %s is not ready: %s", e.NodeClass, e.Reason)
}

// IsInsufficientCapacity reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// IsNotFound reports whether err is or wraps a NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// StampNodeClassHash records the hash of the node class a claim is
// launched with (v1alpha1.AnnotationNodeClassHash and its version) in
// annotations, which it returns (allocated when nil).
func StampNodeClassHash(annotations map[string]string, hash, version string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AnnotationNodeClassHash] = hash
	annotations[v1alpha1.AnnotationNodeClassHashVersion] = version
	return annotations
}

// CopyNodeClassHash copies the node class hash annotations, when present,
// from one annotation map to another, which it returns (allocated when
// nil and there is something to copy).
func CopyNodeClassHash(to, from map[string]string) map[string]string {
	for _, k := range []string{v1alpha1.AnnotationNodeClassHash, v1alpha1.AnnotationNodeClassHashVersion} {
		if v := from[k]; v != "" {
			if to == nil {
				to = map[string]string{}
			}
			to[k] = v
		}
	}
	return to
}

// StaticDrift returns why a claim drifted from its node class (kind and
// name, e.g. "EC2NodeClass", "default") whose static settings now hash to
// hash with the given hashing version, or "". A claim stamped with no
// hash or with another version has not drifted by hash.
func StaticDrift(claim *v1alpha1.NodeClaim, kind, name, hash, version string) string {
	have := claim.Annotations[v1alpha1.AnnotationNodeClassHash]
	if have == "" || claim.Annotations[v1alpha1.AnnotationNodeClassHashVersion] != version || have == hash {
		return ""
	}
	return fmt.Sprintf("%s %s's launch settings changed since the node was launched (node class hash %s, now %s)", kind, name, have, hash)
}
