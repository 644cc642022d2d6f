package sqstest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud/aws/sqstest"
)

// client is the real SDK client pointed at a fresh server with one queue.
func client(t *testing.T) (*sqstest.Server, *sqs.Client) {
	t.Helper()
	srv := sqstest.New("us-east-1")
	srv.CreateQueue("events")
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	c := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(hs.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer:      aws.NopRetryer{},
	})
	return srv, c
}

func queueURL(t *testing.T, c *sqs.Client) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("events")})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func TestGetQueueURLOfAMissingQueueIsQueueDoesNotExist(t *testing.T) {
	_, c := client(t)
	_, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	var qdne *types.QueueDoesNotExist
	if !errors.As(err, &qdne) {
		t.Fatalf("GetQueueUrl of a missing queue: %v (%T), want *types.QueueDoesNotExist", err, err)
	}
	// The query-compatible code overrides the shape name, as real SQS.
	if qdne.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("error code %q, want AWS.SimpleQueueService.NonExistentQueue", qdne.ErrorCode())
	}
	if url := queueURL(t, c); url == "" {
		t.Fatal("no URL for the existing queue")
	}
}

func TestSendReceiveDeleteRoundTrip(t *testing.T) {
	srv, c := client(t)
	ctx := context.Background()
	url := queueURL(t, c)
	bodies := []string{`{"a":1}`, "second ✓", "third"}
	for _, b := range bodies {
		// The SDK checks MD5OfMessageBody against the body it sent.
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(b)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 2,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || aws.ToString(out.Messages[0].Body) != bodies[0] || aws.ToString(out.Messages[1].Body) != bodies[1] {
		t.Fatalf("received %+v, want the first two bodies in order", out.Messages)
	}
	if got := out.Messages[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; got != "1" {
		t.Errorf("ApproximateReceiveCount %q, want 1", got)
	}
	if v, f, _ := srv.Stats("events"); v != 1 || f != 2 {
		t.Errorf("visible %d, in flight %d; want 1 and 2", v, f)
	}
	for _, m := range out.Messages {
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	if v, f, d := srv.Stats("events"); v != 1 || f != 0 || d != 2 {
		t.Errorf("visible %d, in flight %d, deleted %d; want 1, 0, 2", v, f, d)
	}
	_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: aws.String("made-up")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ReceiptHandleIsInvalid" {
		t.Errorf("DeleteMessage of a made-up handle: %v, want ReceiptHandleIsInvalid", err)
	}
}

func TestLongPollReturnsWhenAMessageArrives(t *testing.T) {
	srv, c := client(t)
	url := queueURL(t, c)
	go func() {
		time.Sleep(200 * time.Millisecond)
		srv.Send("events", "late")
	}()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 20, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "late" {
		t.Fatalf("long poll got %+v, want the message sent while it waited", out.Messages)
	}
}

func TestLongPollEndsEmptyAfterTheWait(t *testing.T) {
	srv, c := client(t)
	srv.MaxWait = 50 * time.Millisecond
	url := queueURL(t, c)
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 20})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("empty queue: %d messages, %v; want none and no error", len(out.Messages), err)
	}
}

func TestAnUndeletedMessageComesBackAfterItsVisibilityTimeout(t *testing.T) {
	srv, c := client(t)
	ctx := context.Background()
	url := queueURL(t, c)
	srv.Send("events", "retry me")
	in := &sqs.ReceiveMessageInput{QueueUrl: &url, VisibilityTimeout: 1, WaitTimeSeconds: 5,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}}
	first, err := c.ReceiveMessage(ctx, in)
	if err != nil || len(first.Messages) != 1 {
		t.Fatalf("first receive: %v, %v", first, err)
	}
	second, err := c.ReceiveMessage(ctx, in)
	if err != nil || len(second.Messages) != 1 {
		t.Fatalf("second receive: %+v, %v; want the message again once visible", second, err)
	}
	if got := second.Messages[0].Attributes["ApproximateReceiveCount"]; got != "2" {
		t.Errorf("ApproximateReceiveCount %q on the second delivery, want 2", got)
	}
	if aws.ToString(second.Messages[0].ReceiptHandle) == aws.ToString(first.Messages[0].ReceiptHandle) {
		t.Error("the second delivery reused the first receipt handle")
	}
}

func TestInvalidParametersAndInjectedFaults(t *testing.T) {
	srv, c := client(t)
	ctx := context.Background()
	url := queueURL(t, c)
	_, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 11})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("MaxNumberOfMessages 11: %v, want InvalidParameterValue", err)
	}
	srv.FailNext("ReceiveMessage", 1, 500, "InternalError")
	_, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
	if !errors.As(err, &ae) || ae.ErrorCode() != "InternalError" {
		t.Errorf("injected fault: %v, want InternalError", err)
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url}); err != nil {
		t.Errorf("after the fault: %v", err)
	}
	if n := srv.Calls("ReceiveMessage"); n != 3 {
		t.Errorf("%d ReceiveMessage calls counted, want 3", n)
	}
	bad := url + "x"
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &bad, MessageBody: aws.String("x")})
	var qdne *types.QueueDoesNotExist
	if !errors.As(err, &qdne) {
		t.Errorf("SendMessage to a missing queue: %v, want QueueDoesNotExist", err)
	}
}
