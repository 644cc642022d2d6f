package operator

import (
	"context"
	"sync/atomic"

	"github.com/go-logr/logr"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// countingSink writes the operator's Events and counts the writes that
// fail in metrics.EventWriteErrors. The broadcaster in front of it logs
// every failed attempt of every event, which during an API server outage
// buries the log; the operator gives the broadcaster a logger that
// discards, and this sink says once that writes fail and once that they
// work again, with how many failed meanwhile.
type countingSink struct {
	sink events.EventSink
	log  logr.Logger
	// failing is set from the first failed write to the next success;
	// failed counts the failures meanwhile.
	failing atomic.Bool
	failed  atomic.Int64
}

var _ events.EventSink = (*countingSink)(nil)

func (s *countingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.sink.Create(ctx, e)
	s.observe(err)
	return out, err
}

func (s *countingSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.sink.Update(ctx, e)
	s.observe(err)
	return out, err
}

func (s *countingSink) Patch(ctx context.Context, old *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := s.sink.Patch(ctx, old, data)
	s.observe(err)
	return out, err
}

// observe counts a failed write. A series patch of an event that expired
// (NotFound, followed by a create) and a create that raced another
// (AlreadyExists) are part of the broadcaster's protocol, not failures.
func (s *countingSink) observe(err error) {
	if err == nil {
		if s.failing.CompareAndSwap(true, false) {
			s.log.Info("writing events again", "failedWrites", s.failed.Swap(0))
		}
		return
	}
	if apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
		return
	}
	metrics.EventWriteErrors.Inc()
	s.failed.Add(1)
	if s.failing.CompareAndSwap(false, true) {
		s.log.Error(err, "could not write an event; further failures are counted in rightsize_event_write_errors_total, not logged")
	}
}
