package nodeclaim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
)

// OfNode maps a Node to the NodeClaims with its providerID (through
// IndexClaimProviderID), for controllers that watch Nodes on behalf of
// their claims.
func OfNode(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		id := o.(*corev1.Node).Spec.ProviderID
		if id == "" {
			return nil
		}
		return requests(ctx, c, client.MatchingFields{IndexClaimProviderID: id})
	}
}

// OfPool maps a NodePool to its NodeClaims.
func OfPool(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return requests(ctx, c, client.MatchingLabels{v1alpha1.LabelNodePool: o.GetName()})
	}
}

// requests lists the NodeClaims that match and returns a request for each;
// nil if the cache cannot say (the next event or resync asks again).
func requests(ctx context.Context, c client.Reader, match client.ListOption) []reconcile.Request {
	var claims v1alpha1.NodeClaimList
	if err := c.List(ctx, &claims, match); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(claims.Items))
	for i := range claims.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims.Items[i])}
	}
	return out
}

// NodeOf returns the Node of a claim's instance (through
// IndexNodeProviderID), or nil when the claim has no instance yet or its
// Node has not registered.
func NodeOf(ctx context.Context, c client.Reader, claim *v1alpha1.NodeClaim) (*corev1.Node, error) {
	if claim.Status.ProviderID == "" {
		return nil, nil
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingFields{IndexNodeProviderID: claim.Status.ProviderID}); err != nil {
		return nil, fmt.Errorf("finding the node of %s: %w", claim.Name, err)
	}
	if len(nodes.Items) == 0 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}
