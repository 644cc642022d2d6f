package operator

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/operator/metrics"
)

// scriptedSink answers each write with the next error of its script.
type scriptedSink struct{ errs []error }

func (s *scriptedSink) next() error {
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

func (s *scriptedSink) Create(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return &eventsv1.Event{}, s.next()
}

func (s *scriptedSink) Update(context.Context, *eventsv1.Event) (*eventsv1.Event, error) {
	return &eventsv1.Event{}, s.next()
}

func (s *scriptedSink) Patch(context.Context, *eventsv1.Event, []byte) (*eventsv1.Event, error) {
	return &eventsv1.Event{}, s.next()
}

func TestCountingSinkCountsFailedWritesAndLogsOnlyTheChanges(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	gone := apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e")
	for _, tc := range []struct {
		name        string
		errs        []error
		wantCounted float64
		wantLines   []string // log messages, in order
	}{
		{name: "all written", errs: []error{nil, nil}},
		{name: "an outage of five writes, then recovery", errs: []error{nil, down, down, down, down, down, nil, nil}, wantCounted: 5,
			wantLines: []string{"could not write an event", "writing events again"}},
		{name: "two outages", errs: []error{down, nil, down, down, nil}, wantCounted: 3,
			wantLines: []string{"could not write an event", "writing events again", "could not write an event", "writing events again"}},
		{name: "an expired series is not a failure", errs: []error{gone, nil}},
		{name: "still down at the end", errs: []error{down, down}, wantCounted: 2, wantLines: []string{"could not write an event"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := &countingSink{sink: &scriptedSink{errs: tc.errs}, log: logr.FromSlogHandler(slog.NewTextHandler(&buf, nil))}
			before := testutil.ToFloat64(metrics.EventWriteErrors)
			for i := range tc.errs {
				switch i % 3 {
				case 0:
					_, _ = s.Create(context.Background(), &eventsv1.Event{})
				case 1:
					_, _ = s.Patch(context.Background(), &eventsv1.Event{}, nil)
				default:
					_, _ = s.Update(context.Background(), &eventsv1.Event{})
				}
			}
			if got := testutil.ToFloat64(metrics.EventWriteErrors) - before; got != tc.wantCounted {
				t.Errorf("counted %v failed writes, want %v", got, tc.wantCounted)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if l == "" {
					continue
				}
				for _, want := range []string{"could not write an event", "writing events again"} {
					if strings.Contains(l, want) {
						lines = append(lines, want)
					}
				}
			}
			if strings.Join(lines, "|") != strings.Join(tc.wantLines, "|") {
				t.Errorf("logged %q, want %q\n%s", lines, tc.wantLines, buf.String())
			}
		})
	}
}

func TestLeaseLostIsOneLineWithTheReasonAndTheNextStep(t *testing.T) {
	err := leaseLost(Options{LeaderElectionNamespace: "kube-system", LeaderElectionID: "rightsize", RenewDeadline: DefaultRenewDeadline})
	if !errors.Is(err, ErrLeaderElectionLost) {
		t.Errorf("%v does not wrap ErrLeaderElectionLost", err)
	}
	msg := err.Error()
	for _, want := range []string{"leader election lost: ", "kube-system/rightsize", "10s renew deadline", "; exiting so the Deployment restarts the operator"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%q spans lines", msg)
	}
}
