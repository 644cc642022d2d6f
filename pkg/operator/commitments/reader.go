// Package commitments reads the cluster's Commitment objects (Reserved
// Instances and Savings Plans, rightsize.dev/v1alpha1) for the operator's
// planners and gauges, as the bill spends them (plan.Commitment).
//
// They are listed from the API server, not an informer: an informer on a
// kind the cluster does not serve (an older install without the CRD), or
// that the operator may not list (an older ClusterRole), never syncs. Such
// a cluster has no commitments, and is asked again only every
// optional.Retry.
package commitments

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/optional"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// +kubebuilder:rbac:groups=rightsize.dev,resources=commitments,verbs=get;list;watch

// Reader lists the Commitments of one region. It is safe for concurrent
// use: the provisioner, the disruption controller and the gauges may share
// one.
type Reader struct {
	api    client.Reader
	region string
	now    func() time.Time

	mu   sync.Mutex
	pace optional.Pacer
}

// NewReader reads Commitments through api (the manager's APIReader, not its
// cache) for region (the operator's; "" for any): a Commitment of another
// region covers nothing the operator launches and is left out.
func NewReader(api client.Reader, region string) *Reader {
	return &Reader{api: api, region: region, now: time.Now}
}

// WithClock makes r pace an absent kind by now rather than the wall clock;
// it returns r.
func (r *Reader) WithClock(now func() time.Time) *Reader {
	r.now = now
	return r
}

// Read returns the commitments to spend: none when the cluster does not
// serve the kind or the operator may not list it (then it is not asked
// again for optional.Retry). err is a failed list (the caller keeps what
// it had); invalid joins what CommitmentsOf refused of the objects listed,
// each left out so that it hides none of the others.
func (r *Reader) Read(ctx context.Context) (cs []plan.Commitment, invalid, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.pace.Wait(now) {
		return nil, nil, nil
	}
	var list v1alpha1.CommitmentList
	err = r.api.List(ctx, &list)
	r.pace.Saw(err, now)
	if err != nil {
		if optional.Absent(err) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("listing Commitments: %w", err)
	}
	var errs []error
	for i := range list.Items {
		one, _, err := plan.CommitmentsOf(list.Items[i:i+1], r.region)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cs = append(cs, one...)
	}
	return cs, errors.Join(errs...), nil
}
