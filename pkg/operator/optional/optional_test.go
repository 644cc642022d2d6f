package optional

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPacerLeavesAnAbsentKindAloneForRetry(t *testing.T) {
	gr := schema.GroupResource{Group: "autoscaling.x-k8s.io", Resource: "capacitybuffers"}
	for _, tt := range []struct {
		name   string
		err    error
		absent bool
	}{
		{name: "no CRD (no match)", err: &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: gr.Group, Kind: "CapacityBuffer"}}, absent: true},
		{name: "not found", err: apierrors.NewNotFound(gr, ""), absent: true},
		{name: "forbidden", err: apierrors.NewForbidden(gr, "", errors.New("no")), absent: true},
		{name: "a server error", err: apierrors.NewInternalError(errors.New("etcd")), absent: false},
		{name: "listed", err: nil, absent: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			var p Pacer
			if p.Wait(now) {
				t.Fatal("a new pacer waits")
			}
			p.Saw(tt.err, now)
			if got := p.Wait(now.Add(time.Second)); got != tt.absent {
				t.Errorf("waits a second later: %v, want %v", got, tt.absent)
			}
			if p.Wait(now.Add(Retry)) {
				t.Errorf("still waits after Retry")
			}
			p.Saw(nil, now.Add(Retry))
			if p.Wait(now.Add(Retry + time.Second)) {
				t.Errorf("waits after a list that answered")
			}
		})
	}
}
