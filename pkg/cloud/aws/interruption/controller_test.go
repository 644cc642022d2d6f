package interruption

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	rsaws "github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/interruption/messages"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/sqstest"
)

// spotEvent and rebalanceEvent are EventBridge's examples that package
// messages' tests parse.
var spotEvent, rebalanceEvent = testEvent("spot.json"), testEvent("rebalance.json")

func testEvent(name string) string {
	b, err := os.ReadFile(filepath.Join("messages", "testdata", name))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

const (
	testQueue    = "rightsize-interruptions"
	spotInstance = "i-0b662ef9931388ba0"
	odInstance   = "i-00000000000000001"
	otherInst    = "i-0fffffffffffffff0"
	testSecret   = "sqsTestSecretKey/DoNotLog+0123456789"
)

// fixture is the controller wired to an sqstest server through the real
// SDK client, and to a fake API client holding two NodeClaims with Nodes:
// a spot one (spotInstance, m6i.large in us-east-1b) and an on-demand one.
type fixture struct {
	srv         *sqstest.Server
	kube        client.Client
	events      *events.FakeRecorder
	unavailable *rsaws.UnavailableOfferings
	reg         *prometheus.Registry
	c           *Controller

	mu     sync.Mutex
	logs   []string
	sleeps []time.Duration
}

func claim(name, instance, capacityType string) *v1alpha1.NodeClaim {
	return &v1alpha1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha1.Group + "/termination"}},
		Status: v1alpha1.NodeClaimStatus{
			ProviderID: "aws:///us-east-1b/" + instance, NodeName: "node-" + name,
			InstanceType: "m6i.large", Zone: "us-east-1b", CapacityType: capacityType,
		},
	}
}

func newFixture(t *testing.T, funcs interceptor.Funcs, tune func(*Options)) *fixture {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, c := range []*v1alpha1.NodeClaim{claim("spot", spotInstance, cloud.CapacityTypeSpot), claim("od", odInstance, cloud.CapacityTypeOnDemand)} {
		objs = append(objs, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Status.NodeName}, Spec: corev1.NodeSpec{ProviderID: c.Status.ProviderID}})
	}
	f := &fixture{
		srv:         sqstest.New("us-east-1"),
		kube:        fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithInterceptorFuncs(funcs).Build(),
		events:      events.NewFakeRecorder(100),
		unavailable: rsaws.NewUnavailableOfferings(3*time.Minute, nil),
		reg:         prometheus.NewRegistry(),
	}
	f.srv.CreateQueue(testQueue)
	hs := httptest.NewServer(f.srv)
	t.Cleanup(func() { f.srv.Close(); hs.Close() })
	o := Options{
		Queue: testQueue, Client: f.kube, Recorder: f.events, Unavailable: f.unavailable, Registerer: f.reg,
		SQS: sqs.New(sqs.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(hs.URL), Retryer: aws.NopRetryer{},
			Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", testSecret, ""),
		}),
		WaitTime: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		Logger: funcr.New(func(prefix, args string) {
			f.mu.Lock()
			f.logs = append(f.logs, prefix+" "+args)
			f.mu.Unlock()
		}, funcr.Options{Verbosity: 1}),
	}
	if tune != nil {
		tune(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.sleeps = append(f.sleeps, d)
		f.mu.Unlock()
		return sleepCtx(ctx, d)
	}
	f.c = c
	return f
}

// start runs the controller until the test ends, and checks that it
// returns nil then and never logged the secret key.
func (f *fixture) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v when its context ended", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Start did not return after its context ended")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, l := range f.logs {
			if strings.Contains(l, testSecret) {
				t.Errorf("the secret key is logged: %s", l)
			}
		}
	})
}

// waitDeleted waits until the queue has deleted n messages and holds none.
func (f *fixture) waitDeleted(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, inFlight, d := f.srv.Stats(testQueue)
		if d == n && v == 0 && inFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue: %d visible, %d in flight, %d deleted; want all %d deleted", v, inFlight, d, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (f *fixture) get(t *testing.T, name string) *v1alpha1.NodeClaim {
	t.Helper()
	var c v1alpha1.NodeClaim
	err := f.kube.Get(context.Background(), client.ObjectKey{Name: name}, &c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) logged(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.logs {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

func counter(t *testing.T, c *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	return testutil.ToFloat64(c.WithLabelValues(labels...))
}

func TestSpotInterruptionDeletesTheNodeClaimAndMarksTheOffering(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.start(t)
	f.srv.Send(testQueue, spotEvent)
	f.waitDeleted(t, 1)

	c := f.get(t, "spot")
	if c != nil && c.DeletionTimestamp == nil {
		t.Fatal("the spot NodeClaim is not being deleted")
	}
	if c != nil && c.Annotations[v1alpha1.AnnotationDeletionReason] != ReasonInterruption {
		t.Errorf("deletion reason %q, want %q", c.Annotations[v1alpha1.AnnotationDeletionReason], ReasonInterruption)
	}
	if od := f.get(t, "od"); od == nil || od.DeletionTimestamp != nil {
		t.Error("the on-demand NodeClaim of another instance was deleted")
	}
	if !f.unavailable.IsUnavailable("m6i.large", "us-east-1b", cloud.CapacityTypeSpot) {
		t.Error("m6i.large spot in us-east-1b is not marked unavailable")
	}
	if f.unavailable.IsUnavailable("m6i.large", "us-east-1b", cloud.CapacityTypeOnDemand) || f.unavailable.Len() != 1 {
		t.Errorf("%d offerings unavailable, want only the spot one", f.unavailable.Len())
	}
	evs := f.drainEvents()
	want := "Warning SpotInterrupted spot interruption warning for " + spotInstance + ": the instance is reclaimed at 12:04:05Z; draining the node and replacing it"
	if len(evs) != 2 || evs[0] != want || evs[1] != want {
		t.Errorf("events %q, want twice (NodeClaim and Node) %q", evs, want)
	}
	if got := counter(t, f.c.metrics.received, string(messages.KindSpotInterruption)); got != 1 {
		t.Errorf("received{spot_interruption} = %v, want 1", got)
	}
	if got := counter(t, f.c.metrics.actions, string(messages.KindSpotInterruption), "delete"); got != 1 {
		t.Errorf("actions{spot_interruption,delete} = %v, want 1", got)
	}
	if got := counter(t, f.c.metrics.actions, string(messages.KindSpotInterruption), "mark_unavailable"); got != 1 {
		t.Errorf("actions{spot_interruption,mark_unavailable} = %v, want 1", got)
	}

	// The same warning again (EventBridge delivers at least once): the
	// claim is already going, no second event.
	f.srv.Send(testQueue, spotEvent)
	f.waitDeleted(t, 2)
	if evs := f.drainEvents(); len(evs) != 0 {
		t.Errorf("a repeated warning recorded %q", evs)
	}
}

func TestStateChangeAndScheduledChangeDeleteOnDemandClaims(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		kind       messages.Kind
	}{
		{"stopping", fmt.Sprintf(`{"detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","time":"2026-11-30T12:00:00Z","detail":{"instance-id":%q,"state":"stopping"}}`, odInstance), messages.KindStateChange},
		{"scheduled retirement", fmt.Sprintf(`{"detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[{"entityValue":%q}]}}`, odInstance), messages.KindScheduledChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{}, nil)
			f.start(t)
			f.srv.Send(testQueue, tc.body)
			f.waitDeleted(t, 1)
			if c := f.get(t, "od"); c != nil && c.DeletionTimestamp == nil {
				t.Fatal("the NodeClaim is not being deleted")
			}
			if f.unavailable.Len() != 0 {
				t.Error("an offering was marked unavailable for an on-demand instance")
			}
			if got := counter(t, f.c.metrics.actions, string(tc.kind), "delete"); got != 1 {
				t.Errorf("actions{%s,delete} = %v, want 1", tc.kind, got)
			}
		})
	}
}

func TestRebalanceRecommendationOnlyRecordsAnEvent(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.start(t)
	f.srv.Send(testQueue, rebalanceEvent)
	f.waitDeleted(t, 1)
	if c := f.get(t, "spot"); c == nil || c.DeletionTimestamp != nil {
		t.Fatal("a rebalance recommendation deleted the NodeClaim")
	}
	if f.unavailable.Len() != 0 {
		t.Error("a rebalance recommendation marked an offering unavailable")
	}
	evs := f.drainEvents()
	if len(evs) != 2 || !strings.HasPrefix(evs[0], "Normal RebalanceRecommended rebalance recommendation for "+spotInstance) {
		t.Errorf("events %q, want a RebalanceRecommended event on the NodeClaim and the Node", evs)
	}
}

func TestUnknownInstancesUnknownEventsAndMalformedMessagesAreDeleted(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.start(t)
	f.srv.Send(testQueue, strings.ReplaceAll(spotEvent, spotInstance, otherInst))
	f.srv.Send(testQueue, `{"detail-type":"EC2 AMI State Change","source":"aws.ec2","detail":{}}`)
	f.srv.Send(testQueue, "not json at all")
	f.srv.Send(testQueue, `{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-bad"}}`)
	f.waitDeleted(t, 4)
	for _, name := range []string{"spot", "od"} {
		if c := f.get(t, name); c == nil || c.DeletionTimestamp != nil {
			t.Errorf("NodeClaim %s was deleted", name)
		}
	}
	if f.unavailable.Len() != 0 {
		t.Error("an offering was marked unavailable for an instance no NodeClaim owns")
	}
	if evs := f.drainEvents(); len(evs) != 0 {
		t.Errorf("events %q, want none", evs)
	}
	if got := counter(t, f.c.metrics.received, "malformed"); got != 2 {
		t.Errorf("received{malformed} = %v, want 2", got)
	}
	if got := counter(t, f.c.metrics.received, string(messages.KindUnknown)); got != 1 {
		t.Errorf("received{unknown} = %v, want 1", got)
	}
	if n := f.logged("deleting a message that is not an EC2 interruption event"); n != 2 {
		t.Errorf("%d log lines for malformed messages, want 2", n)
	}
	if n := f.logged("deleting an event that needs no action"); n != 1 {
		t.Errorf("%d log lines for the unknown event, want 1", n)
	}
	if n := f.logged("no NodeClaim owns the instance"); n != 1 {
		t.Errorf("%d log lines for the unknown instance, want 1", n)
	}
}

func TestReceiveErrorsAreRetriedWithBackoff(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.srv.FailNext("ReceiveMessage", 4, 500, "InternalError")
	f.srv.Send(testQueue, spotEvent)
	f.start(t)
	f.waitDeleted(t, 1)
	if c := f.get(t, "spot"); c != nil && c.DeletionTimestamp == nil {
		t.Fatal("the message was not acted on after the errors")
	}
	if got := counter(t, f.c.metrics.queueErrors, "ReceiveMessage"); got != 4 {
		t.Errorf("queue errors{ReceiveMessage} = %v, want 4", got)
	}
	f.mu.Lock()
	sleeps := append([]time.Duration(nil), f.sleeps...)
	f.mu.Unlock()
	if len(sleeps) != 4 {
		t.Fatalf("waited %v between attempts, want 4 waits", sleeps)
	}
	// Each wait is in the upper half of 10ms, 20ms, 40ms, 80ms (capped).
	for i, d := range sleeps {
		ceil := min(10*time.Millisecond<<i, 80*time.Millisecond)
		if d < ceil/2 || d > ceil {
			t.Errorf("wait %d: %s, want %s to %s", i, d, ceil/2, ceil)
		}
	}
	if n := f.logged("receiving from the interruption queue failed; retrying"); n != 4 {
		t.Errorf("%d retry log lines, want 4", n)
	}
}

func TestAMissingQueueIsWaitedFor(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, func(o *Options) { o.Queue = "created-later" })
	f.start(t)
	deadline := time.Now().Add(10 * time.Second)
	for f.srv.Calls("GetQueueUrl") < 3 {
		if time.Now().After(deadline) {
			t.Fatal("GetQueueUrl was not retried")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := f.logged("the interruption queue does not exist"); n < 2 {
		t.Errorf("%d log lines about the missing queue, want one per attempt", n)
	}
	f.srv.CreateQueue("created-later")
	f.srv.Send("created-later", spotEvent)
	deadline = time.Now().Add(10 * time.Second)
	for {
		if _, _, d := f.srv.Stats("created-later"); d == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the message of the queue created later was not handled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := counter(t, f.c.metrics.queueErrors, "GetQueueUrl"); got < 2 {
		t.Errorf("queue errors{GetQueueUrl} = %v, want each failed lookup counted", got)
	}
}

func TestAFailedDeletionIsRetriedThenDropped(t *testing.T) {
	var attempts int
	var mu sync.Mutex
	f := newFixture(t, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			mu.Lock()
			attempts++
			mu.Unlock()
			return apierrors.NewServiceUnavailable("etcd is having a bad day")
		},
	}, func(o *Options) { o.VisibilityTimeout = time.Second; o.MaxReceives = 2 })
	f.start(t)
	f.srv.Send(testQueue, spotEvent)
	f.waitDeleted(t, 1)
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 {
		t.Errorf("%d deletion attempts, want 2 (one per receive, MaxReceives 2)", attempts)
	}
	if n := f.logged("it is retried when the message comes back"); n != 1 {
		t.Errorf("%d retry log lines, want 1", n)
	}
	if n := f.logged("dropping it"); n != 1 {
		t.Errorf("%d drop log lines, want 1", n)
	}
}

func TestNewRequiresTheQueueAndClients(t *testing.T) {
	if _, err := New(Options{Queue: "q"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("New without clients: %v, want an error", err)
	}
}
