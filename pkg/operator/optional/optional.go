// Package optional paces the polling of API kinds a cluster may not serve
// (CapacityBuffer, ProvisioningRequest: their CRDs are installed by whoever
// uses them) or the operator may not list. Such kinds are read from the
// API server, not an informer (an informer on a missing kind never syncs),
// and a client asked for a kind the cluster does not serve asks the server
// for its API groups again each time: polled every second, two pollers
// cost two discovery requests a second on a cluster without the CRDs.
package optional

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Retry is how long a poller leaves a kind alone once the API server said
// it does not serve it, or that the operator may not list it: a CRD
// installed, or a ClusterRole re-applied, is seen within this.
const Retry = 30 * time.Second

// Absent reports whether err says that the cluster does not serve the
// kind (no such resource, no CRD) or that the operator may not list it.
func Absent(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}

// Pacer remembers, for one polled kind, until when to leave it alone. Its
// zero value polls at once. It is not safe for concurrent use: one poller
// owns it.
type Pacer struct {
	until time.Time
}

// Wait reports whether the kind is to be left alone at now.
func (p *Pacer) Wait(now time.Time) bool {
	return now.Before(p.until)
}

// Saw records the answer to a list at now: an Absent error leaves the kind
// alone for Retry; any other answer lets the next tick poll.
func (p *Pacer) Saw(err error, now time.Time) {
	if err != nil && Absent(err) {
		p.until = now.Add(Retry)
		return
	}
	p.until = time.Time{}
}
