package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/apis/v1alpha1"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws"
	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/sqstest"
)

const interruptionQueue = "e2e-interruptions"

// TestOperatorAWSInterruption runs the operator with --cloud aws and
// --interruption-queue against ec2test and sqstest: a spot node running a
// Deployment's pods gets an EC2 Spot Instance Interruption Warning through
// the queue; its NodeClaim is deleted, the node drained, its instance
// terminated, and the pods run again on a node of another offering (the
// interrupted one is avoided for a while). The latencies from the message
// to the node gone and to the pods Running are logged.
func TestOperatorAWSInterruption(t *testing.T) {
	a := newAWSEnv(t, startOpEnv(t))
	ctx := context.Background()

	queue := sqstest.New(awsRegion)
	queue.CreateQueue(interruptionQueue)
	qs := httptest.NewServer(queue)
	t.Cleanup(func() { queue.Close(); qs.Close() })
	// The test sends the event through the real SDK client, as EventBridge
	// would through the SQS API.
	sender := sqs.New(sqs.Options{
		Region: awsRegion, BaseEndpoint: awssdk.String(qs.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIAE2ESENDER", "sender-secret", ""),
	})

	metricsAddr := freePort(t)
	op := a.startAWSOperator(t, "aws-interruption", []string{"AWS_ENDPOINT_URL_SQS=" + qs.URL},
		"--interruption-queue", interruptionQueue, "--metrics-bind-address", metricsAddr)

	ns := a.namespace(t, "aws-interruption")
	a.awsPool(t, "spot", req(v1alpha1.LabelCapacityType, "spot"), req(cloud.LabelInstanceFamily, "m6i"))
	d := deployment("web", 2, "500m", "1Gi")
	d.Namespace = ns
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1alpha1.LabelNodePool: "spot"}
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(0))
	if _, err := a.Client().AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.waitRunning(t, ns, 2, 60*time.Second)
	claims := a.claims(t, "spot")
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims of pool spot, want 1 for both pods", len(claims))
	}
	old := claims[0]
	if old.Status.CapacityType != cloud.CapacityTypeSpot || old.Status.InstanceType != awsSpotType || old.Status.Zone != awsSpotZone {
		t.Fatalf("NodeClaim %s is %s %s in %s, want the cheapest offering: %s spot in %s", old.Name, old.Status.InstanceType,
			old.Status.CapacityType, old.Status.Zone, awsSpotType, awsSpotZone)
	}
	id, err := aws.ParseProviderID(old.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}

	sent := time.Now()
	event := fmt.Sprintf(`{"version":"0","id":"e2e-1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",`+
		`"account":"000000000000","time":%q,"region":%q,"resources":["arn:aws:ec2:%s:instance/%s"],`+
		`"detail":{"instance-id":%q,"instance-action":"terminate"}}`, sent.UTC().Format(time.RFC3339), awsRegion, awsSpotZone, id, id)
	qurl, err := sender.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: awssdk.String(interruptionQueue)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sender.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: qurl.QueueUrl, MessageBody: awssdk.String(event)}); err != nil {
		t.Fatal(err)
	}

	var claimGone, nodeGone, terminated, running time.Duration
	var replacement string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
		if claimGone == 0 {
			var c v1alpha1.NodeClaim
			if apierrors.IsNotFound(a.c.Get(ctx, client.ObjectKey{Name: old.Name}, &c)) {
				claimGone = time.Since(sent)
			}
		}
		if nodeGone == 0 {
			var n corev1.Node
			if apierrors.IsNotFound(a.c.Get(ctx, client.ObjectKey{Name: old.Status.NodeName}, &n)) {
				nodeGone = time.Since(sent)
			}
		}
		if terminated == 0 {
			a.mu.Lock()
			at, ok := a.terminated[id]
			a.mu.Unlock()
			if ok {
				terminated = at.Sub(sent)
			}
		}
		if running == 0 {
			var pods corev1.PodList
			if err := a.c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				return false, nil
			}
			n := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != old.Status.NodeName {
					n++
					replacement = p.Spec.NodeName
				}
			}
			if n == 2 {
				running = time.Since(sent)
			}
		}
		return claimGone > 0 && nodeGone > 0 && terminated > 0 && running > 0, nil
	})
	if err != nil {
		t.Fatalf("after the interruption warning for %s: NodeClaim %s gone %v, node gone %v, instance terminated %v, both pods Running elsewhere %v",
			id, old.Name, claimGone > 0, nodeGone > 0, terminated > 0, running > 0)
	}

	// The replacement is another offering: the interrupted one is avoided.
	i := slices.IndexFunc(a.claims(t, "spot"), func(c v1alpha1.NodeClaim) bool { return c.Status.NodeName == replacement })
	if i < 0 {
		t.Fatalf("no NodeClaim of pool spot owns the replacement node %s", replacement)
	}
	repl := a.claims(t, "spot")[i]
	if repl.Status.CapacityType == old.Status.CapacityType && repl.Status.InstanceType == old.Status.InstanceType && repl.Status.Zone == old.Status.Zone {
		t.Errorf("the replacement %s is the interrupted offering again: %s %s in %s", repl.Name, repl.Status.InstanceType, repl.Status.CapacityType, repl.Status.Zone)
	}

	// One sentence on the NodeClaim and on the Node.
	evs, err := a.Client().EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "spot interruption warning for " + id + ": the instance is reclaimed at " + sent.UTC().Add(2*time.Minute).Format("15:04:05Z") +
		"; draining the node and replacing it"
	onClaim, onNode := false, false
	for _, e := range evs.Items {
		if e.Reason != "SpotInterrupted" || e.Note != want {
			continue
		}
		onClaim = onClaim || (e.Regarding.Kind == "NodeClaim" && e.Regarding.Name == old.Name)
		onNode = onNode || (e.Regarding.Kind == "Node" && e.Regarding.Name == old.Status.NodeName)
	}
	if !onClaim || !onNode {
		t.Errorf("SpotInterrupted event %q on the NodeClaim %v, on the Node %v; want both", want, onClaim, onNode)
	}

	// The message is gone from the queue, and the metrics count it.
	if visible, inFlight, deleted := queue.Stats(interruptionQueue); visible+inFlight != 0 || deleted != 1 {
		t.Errorf("queue: %d visible, %d in flight, %d deleted; want the one message deleted", visible, inFlight, deleted)
	}
	m := scrape(t, metricsAddr)
	for _, line := range []string{
		`rightsize_interruption_messages_received_total{kind="spot_interruption"} 1`,
		`rightsize_interruption_actions_total{action="delete",kind="spot_interruption"} 1`,
		`rightsize_interruption_actions_total{action="mark_unavailable",kind="spot_interruption"} 1`,
		`rightsize_nodeclaims_deleted_total{nodepool="spot",reason="interruption"} 1`,
	} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if n := len(op.records("deleting NodeClaim for an interruption event")); n != 1 {
		t.Errorf("%d \"deleting NodeClaim for an interruption event\" logs, want 1", n)
	}
	t.Logf("interruption: warning for %s (%s spot in %s) sent → NodeClaim %s deleted %s, instance terminated %s, node gone %s, "+
		"both pods Running on %s (%s %s in %s) %s after",
		id, old.Status.InstanceType, old.Status.Zone, old.Name, claimGone.Round(time.Millisecond), terminated.Round(time.Millisecond),
		nodeGone.Round(time.Millisecond), replacement, repl.Status.InstanceType, repl.Status.CapacityType, repl.Status.Zone, running.Round(time.Millisecond))
	a.checkNoLeak(t)
}
