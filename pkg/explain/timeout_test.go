package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/bench"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/snapshot"
)

// TestTimeoutCoversPrinting: --timeout bounds the run up to the last byte
// of the report, building the result and printing 20,000 pods' plan as
// JSON included, not only the search. Without the reserve for printing
// (renderReserve) the solve runs to the deadline and printing comes on
// top: 0.25-0.5 s on this project's 2-core machine.
func TestTimeoutCoversPrinting(t *testing.T) {
	const (
		timeout = 1500 * time.Millisecond
		// margin is what the solver may take past its deadline to hand
		// over its best plan, and the scheduler's noise.
		margin = 250 * time.Millisecond
	)
	m := &snapshot.Manifests{Pods: bench.KarpenterMix(20000, 42).Pods}
	var out bytes.Buffer
	o := Options{Output: "json", Timeout: timeout, IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard}}
	start := time.Now()
	o.deadline = start.Add(timeout)
	if err := o.runManifests(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	var printed Result
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	if !printed.StoppedEarly {
		t.Fatalf("the search finished within %s: the test needs an input it cuts short", timeout)
	}
	if len(printed.Nodes) == 0 {
		t.Fatal("no nodes printed")
	}
	if elapsed > timeout+margin {
		t.Errorf("--timeout %s: the report was printed after %s (more than %s over)", timeout, elapsed.Round(time.Millisecond), margin)
	}
	t.Logf("--timeout %s: %d pods planned on %d nodes and printed (%.1f MB) in %s", timeout, len(m.Pods), len(printed.Nodes), float64(out.Len())/1e6, elapsed.Round(time.Millisecond))
}
