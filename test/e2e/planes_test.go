package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/rightsize-dev/kubectl-rightsize/test/testenv"
)

// planes are the control planes the tests share: at most planeCount at
// once, started as tests need them, stopped by TestMain.
var planes = planePool{max: planeCount()}

// planeCount is how many shared control planes may run at once:
// RIGHTSIZE_E2E_PLANES, 4 when unset. The longest tests wait on their
// operators' timers most of the time (the e2e used 1.07 cores over its
// 12.5 minutes with three planes, the longest test 9 of them), so a
// fourth plane shortens the step more than it slows each test, at ~1 GiB
// of memory a plane.
func planeCount() int {
	if n, err := strconv.Atoi(os.Getenv("RIGHTSIZE_E2E_PLANES")); err == nil && n > 0 {
		return n
	}
	return 4
}

// longFirst are the tests that take the longest, longest first: when
// several tests wait for a plane, these get one before the rest, so that
// the e2e's wall time is not the longest test started last. make test runs
// the package with -parallel 64, so that every parallel test is running
// (most of them waiting here) and this order, not go test's order of
// declaration, decides which test gets the next plane.
var longFirst = []string{
	"TestConsolidationConverges", "TestDisruption", "TestOperator", "TestJudge",
	"TestTerminationDoNotDisrupt", "TestOperatorAWS", "TestWalkthrough",
	"TestConsolidateAfterSurvivesRestart", "TestOperatorNodeOverlay",
}

// rank orders a test waiting for a plane: lower goes first.
func rank(name string) int {
	if i := slices.Index(longFirst, name); i >= 0 {
		return i
	}
	return len(longFirst)
}

// planePool hands each test that shares a plane one of its own for the
// test's duration.
type planePool struct {
	max int

	mu      sync.Mutex
	started int // planes running or starting
	booting int // of which starting
	named   int // planes ever started, to number them
	free    []*sharedPlane
	waiting []*planeWaiter // ordered by rank, then arrival
	all     []*sharedPlane // to stop
}

// planeWaiter is a test waiting for a plane.
type planeWaiter struct {
	rank int
	got  chan planeOrErr
}

type planeOrErr struct {
	p   *sharedPlane
	err error
}

// sharedPlane is one control plane, with the rightsize.dev CRDs
// installed, that tests take one at a time and [sharedPlane.reset] puts
// back as it was started after each.
type sharedPlane struct {
	n     int          // 1, 2, … in the order started, for logs
	plane *testenv.Env // to stop
	env   *opEnv
	dyn   dynamic.Interface
	// base is what the plane held once started: reset deletes the rest.
	base map[schema.GroupVersionResource]map[string]bool
	// booted is what its start logged, for the first test that takes it
	// (the boot runs beside the tests, which may end before it).
	booted []string
}

// sharedEnv runs t in parallel with the other tests that share a plane
// (its own call of t.Parallel: it starts once the sequential tests are
// done) and gives it a shared control plane to itself; when t ends, the
// plane is put back as it was started: everything the test created is
// deleted. The test must not stop the API server, or leave objects whose
// finalizers nothing will remove but the ones reset strips (see
// [resetTargets]). Operators the test starts are stopped by cleanups
// registered after this one's, which therefore run first.
func sharedEnv(t *testing.T) *opEnv {
	t.Helper()
	if phase() == "solo" {
		t.Fatalf("%s shares a control plane, yet make test ran it alone: take it out of E2E_SOLO in the Makefile", t.Name())
	}
	t.Parallel()
	return planes.take(t)
}

// soloEnv is sharedEnv for a test that holds time to a target (a latency,
// the cost after a timed ramp): it does not call t.Parallel, so it runs in
// go test's sequential phase, when no other test runs beside it.
func soloEnv(t *testing.T) *opEnv {
	t.Helper()
	if phase() == "shared" {
		t.Fatalf("%s must run alone (soloEnv), yet make test ran it beside other steps: add it to E2E_SOLO in the Makefile", t.Name())
	}
	return planes.take(t)
}

// phase is RIGHTSIZE_E2E_PHASE: make test runs the tests that call soloEnv
// (E2E_SOLO in the Makefile) as a step of their own with "solo", and the
// rest of the package with "shared", beside its other steps; unset, as
// for a plain go test, soloEnv's tests run in go test's sequential phase.
func phase() string { return os.Getenv("RIGHTSIZE_E2E_PHASE") }

// take gives t a plane until t ends.
func (p *planePool) take(t *testing.T) *opEnv {
	t.Helper()
	waited := time.Now()
	s, err := p.acquire(rank(t.Name()))
	if err != nil {
		t.Fatalf("no shared control plane: %v", err)
	}
	for _, l := range s.booted {
		t.Log(l)
	}
	s.booted = nil
	// hack/testtime reads this line: the test's time without the wait.
	t.Logf("e2e: waited %s for shared control plane %d", time.Since(waited).Round(time.Millisecond), s.n)
	t.Cleanup(func() {
		s.dumpLogs(t)
		began := time.Now()
		if err := s.reset(); err != nil {
			// The next test gets a fresh plane, not this one's leftovers.
			t.Errorf("the shared control plane %d was left unclean by %s, and is stopped: %v", s.n, t.Name(), err)
			p.discard(s)
			return
		}
		t.Logf("e2e: shared control plane %d reset in %s", s.n, time.Since(began).Round(time.Millisecond))
		p.release(s)
	})
	return s.env
}

// acquire returns a free plane, or waits for one (starting one if fewer
// than max run), the tests of the lowest rank served first.
func (p *planePool) acquire(rank int) (*sharedPlane, error) {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	w := &planeWaiter{rank: rank, got: make(chan planeOrErr, 1)}
	i, _ := slices.BinarySearchFunc(p.waiting, rank, func(o *planeWaiter, r int) int {
		if o.rank <= r {
			return -1
		}
		return 1
	})
	p.waiting = slices.Insert(p.waiting, i, w)
	p.grow()
	p.mu.Unlock()
	r := <-w.got
	return r.p, r.err
}

// grow starts planes, up to max, for the waiters no starting plane will
// serve. Called with mu held.
func (p *planePool) grow() {
	for p.started < p.max && p.booting < len(p.waiting) {
		p.started++
		p.booting++
		p.named++
		go p.boot(p.named)
	}
}

// boot starts plane n and hands it to the first waiter, or tells the
// first waiter why it did not start.
func (p *planePool) boot(n int) {
	s := &sharedPlane{n: n}
	err := s.boot()
	p.mu.Lock()
	p.booting--
	if s.plane != nil {
		p.all = append(p.all, s)
	}
	if err == nil {
		p.mu.Unlock()
		p.release(s)
		return
	}
	p.started--
	var w *planeWaiter
	if len(p.waiting) > 0 {
		w, p.waiting = p.waiting[0], p.waiting[1:]
	}
	p.mu.Unlock()
	if w != nil {
		w.got <- planeOrErr{err: fmt.Errorf("plane %d did not start: %w", n, err)}
	}
}

// release gives s to the first waiter, or keeps it free.
func (p *planePool) release(s *sharedPlane) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) == 0 {
		p.free = append(p.free, s)
		return
	}
	w := p.waiting[0]
	p.waiting = p.waiting[1:]
	w.got <- planeOrErr{p: s}
}

// discard stops s, left unclean, and starts a fresh plane in its place
// if tests wait.
func (p *planePool) discard(s *sharedPlane) {
	s.plane.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = slices.DeleteFunc(p.all, func(o *sharedPlane) bool { return o == s })
	p.started--
	p.grow()
}

// stop stops every plane started.
func (p *planePool) stop() {
	p.mu.Lock()
	all := p.all
	p.all = nil
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(s.plane.Stop)
	}
	wg.Wait()
}

// boot starts the plane, installs the CRDs and takes the inventory reset
// keeps.
func (s *sharedPlane) boot() error {
	env, err := testenv.New(context.Background(), func(format string, args ...any) {
		s.booted = append(s.booted, fmt.Sprintf(format, args...))
	})
	if err != nil {
		return err
	}
	s.plane = env
	if err := applyCRDs(env); err != nil {
		return err
	}
	e, err := opClient(env)
	if err != nil {
		return err
	}
	s.env = e
	if s.dyn, err = dynamic.NewForConfig(env.RESTConfig()); err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	if s.base, err = s.inventory(); err != nil {
		return err
	}
	s.booted = append(s.booted, fmt.Sprintf("e2e: shared control plane %d (%s) ready in %s at %s (dir %s)", s.n, testenv.KubernetesVersion,
		env.StartupTime.Round(time.Millisecond), env.Host, env.Dir))
	return nil
}
