// Package sqstest is an in-process server that speaks enough of the Amazon
// SQS AWS JSON 1.0 protocol (POST /, X-Amz-Target: AmazonSQS.<Operation>,
// Content-Type: application/x-amz-json-1.0) for the real aws-sdk-go-v2 SQS
// client to run against it: GetQueueUrl, SendMessage, ReceiveMessage (long
// polling honoured, visibility timeouts, ApproximateReceiveCount) and
// DeleteMessage, with SQS's error documents (QueueDoesNotExist,
// ReceiptHandleIsInvalid, …) including the query-compatible
// X-Amzn-Query-Error header. Tests reach it only through the SDK over HTTP,
// so the SDK's serializers, deserializers and MD5 checks run as in
// production.
package sqstest

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AccountID is the account every queue belongs to.
const AccountID = "000000000000"

// maxBody bounds a request body (SQS's own message limit is 1 MiB).
const maxBody = 2 << 20

// Defaults SQS applies when the request leaves them out.
const (
	DefaultVisibilityTimeout = 30 * time.Second
	maxWaitTimeSeconds       = 20
	maxMessages              = 10
)

// Server is an SQS endpoint. The zero value is not usable; call New.
type Server struct {
	// MaxWait, when positive, caps how long a ReceiveMessage long poll
	// waits, whatever WaitTimeSeconds asks (tests keep polls short with
	// it).
	MaxWait time.Duration

	mu      sync.Mutex
	region  string
	queues  map[string]*queue // by name
	calls   map[string]int
	faults  map[string][]fault
	now     func() time.Time
	changed chan struct{} // closed and replaced on every change pollers may wait for
	closed  bool
}

type queue struct {
	name     string
	messages []*message
	deleted  int
}

type message struct {
	id, body, md5 string
	handle        string // the current receipt handle; "" until received
	visibleAt     time.Time
	receives      int
	sentAt        time.Time
}

type fault struct {
	status int
	code   string
}

// New returns a server for the region with no queues.
func New(region string) *Server {
	return &Server{
		region: region, queues: map[string]*queue{}, calls: map[string]int{}, faults: map[string][]fault{},
		now: time.Now, changed: make(chan struct{}),
	}
}

// CreateQueue creates the queue if it does not exist.
func (s *Server) CreateQueue(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues[name] == nil {
		s.queues[name] = &queue{name: name}
	}
}

// Send enqueues a message as SendMessage would and returns its ID; it
// panics if the queue does not exist.
func (s *Server) Send(queueName, body string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queueName]
	if q == nil {
		panic("sqstest: no queue " + queueName)
	}
	return s.enqueue(q, body, 0).id
}

// FailNext makes the next n calls of the operation (e.g. "ReceiveMessage",
// or "*" for any) fail with the HTTP status and error code.
func (s *Server) FailNext(operation string, n, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[operation] = append(s.faults[operation], fault{status, code})
	}
}

// Calls is how many requests of the operation the server received,
// failed ones included.
func (s *Server) Calls(operation string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[operation]
}

// Stats reports the queue's messages: visible now, in flight (received and
// not yet visible again), and deleted so far.
func (s *Server) Stats(queueName string) (visible, inFlight, deleted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queueName]
	if q == nil {
		return 0, 0, 0
	}
	now := s.now()
	for _, m := range q.messages {
		if now.Before(m.visibleAt) {
			inFlight++
		} else {
			visible++
		}
	}
	return visible, inFlight, q.deleted
}

// Close ends every long poll at once (each returns no messages) and makes
// later ones return at once, so that an httptest.Server in front of it
// closes without waiting for them.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.notify()
}

// notify wakes the long polls; s.mu must be held.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) enqueue(q *queue, body string, delay time.Duration) *message {
	sum := md5.Sum([]byte(body))
	now := s.now()
	m := &message{id: newID(), body: body, md5: hex.EncodeToString(sum[:]), visibleAt: now.Add(delay), sentAt: now}
	q.messages = append(q.messages, m)
	s.notify()
	return m
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// apiError is an SQS error: its shape name (the __type), the legacy query
// code for X-Amzn-Query-Error, and the HTTP status.
type apiError struct {
	status          int
	shape, queryErr string
	message         string
}

func (e *apiError) Error() string { return e.shape + ": " + e.message }

func clientError(shape, queryCode, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, shape: shape, queryErr: queryCode + ";Sender", message: fmt.Sprintf(format, args...)}
}

func queueDoesNotExist() *apiError {
	return clientError("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.")
}

// ServeHTTP answers one SQS request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	service, op, _ := strings.Cut(target, ".")
	if r.Method != http.MethodPost || service != "AmazonSQS" {
		writeError(w, clientError("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "want POST with X-Amz-Target AmazonSQS.<Operation>, got %s %q", r.Method, target))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
		writeError(w, clientError("InvalidParameterValue", "InvalidParameterValue", "Content-Type %q, want application/x-amz-json-1.0", ct))
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") || !strings.Contains(r.Header.Get("Authorization"), "/sqs/aws4_request") {
		writeError(w, &apiError{status: http.StatusForbidden, shape: "MissingAuthenticationToken", message: "requests must be signed with SigV4 for sqs"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, clientError("InvalidParameterValue", "InvalidParameterValue", "cannot read the body: %v", err))
		return
	}
	s.mu.Lock()
	s.calls[op]++
	f, faulted := s.takeFault(op)
	s.mu.Unlock()
	if faulted {
		writeError(w, &apiError{status: f.status, shape: f.code, queryErr: f.code + ";Receiver", message: "injected fault"})
		return
	}
	var out any
	switch op {
	case "GetQueueUrl":
		out, err = s.getQueueURL(r, body)
	case "SendMessage":
		out, err = s.sendMessage(body)
	case "ReceiveMessage":
		out, err = s.receiveMessage(r, body)
	case "DeleteMessage":
		out, err = s.deleteMessage(body)
	default:
		err = clientError("UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "operation %s is not supported by sqstest", op)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", newID())
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) takeFault(op string) (fault, bool) {
	for _, key := range []string{op, "*"} {
		if q := s.faults[key]; len(q) > 0 {
			s.faults[key] = q[1:]
			return q[0], true
		}
	}
	return fault{}, false
}

func writeError(w http.ResponseWriter, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = &apiError{status: http.StatusInternalServerError, shape: "InternalError", queryErr: "InternalError;Receiver", message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if e.queryErr != "" {
		w.Header().Set("X-Amzn-Query-Error", e.queryErr)
	}
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + e.shape, "message": e.message})
}

func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return clientError("InvalidParameterValue", "InvalidParameterValue", "bad JSON: %v", err)
	}
	return nil
}

// queueOf finds the queue a QueueUrl names (its last path element); s.mu
// must be held.
func (s *Server) queueOf(url string) (*queue, error) {
	if url == "" {
		return nil, clientError("InvalidAddress", "InvalidAddress", "QueueUrl is required")
	}
	i := strings.LastIndexByte(url, '/')
	q := s.queues[url[i+1:]]
	if q == nil || !strings.HasSuffix(url[:max(i, 0)], "/"+AccountID) {
		return nil, queueDoesNotExist()
	}
	return q, nil
}

func (s *Server) getQueueURL(r *http.Request, body []byte) (any, error) {
	var in struct {
		QueueName              string
		QueueOwnerAWSAccountId string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.QueueName == "" {
		return nil, clientError("MissingRequiredParameter", "MissingParameter", "QueueName is required")
	}
	if s.queues[in.QueueName] == nil || (in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != AccountID) {
		return nil, queueDoesNotExist()
	}
	return map[string]string{"QueueUrl": "http://" + r.Host + "/" + AccountID + "/" + in.QueueName}, nil
}

func (s *Server) sendMessage(body []byte) (any, error) {
	var in struct {
		QueueUrl     string
		MessageBody  string
		DelaySeconds int
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.MessageBody == "" {
		return nil, clientError("MissingRequiredParameter", "MissingParameter", "MessageBody is required")
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		return nil, clientError("InvalidParameterValue", "InvalidParameterValue", "DelaySeconds %d: must be 0 to 900", in.DelaySeconds)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	m := s.enqueue(q, in.MessageBody, time.Duration(in.DelaySeconds)*time.Second)
	return map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
}

type messageJSON struct {
	MessageId     string
	ReceiptHandle string
	MD5OfBody     string
	Body          string
	Attributes    map[string]string `json:",omitempty"`
}

func (s *Server) receiveMessage(r *http.Request, body []byte) (any, error) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		WaitTimeSeconds             *int
		VisibilityTimeout           *int
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	n := 1
	if in.MaxNumberOfMessages != nil {
		n = *in.MaxNumberOfMessages
	}
	if n < 1 || n > maxMessages {
		return nil, clientError("InvalidParameterValue", "InvalidParameterValue",
			"Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", n)
	}
	wait := 0
	if in.WaitTimeSeconds != nil {
		wait = *in.WaitTimeSeconds
	}
	if wait < 0 || wait > maxWaitTimeSeconds {
		return nil, clientError("InvalidParameterValue", "InvalidParameterValue",
			"Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", wait)
	}
	visibility := DefaultVisibilityTimeout
	if in.VisibilityTimeout != nil {
		if *in.VisibilityTimeout < 0 || *in.VisibilityTimeout > 43200 {
			return nil, clientError("InvalidParameterValue", "InvalidParameterValue", "VisibilityTimeout %d: must be 0 to 43200", *in.VisibilityTimeout)
		}
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	attrs := map[string]bool{}
	for _, a := range append(in.AttributeNames, in.MessageSystemAttributeNames...) {
		attrs[a] = true
	}
	d := time.Duration(wait) * time.Second
	if s.MaxWait > 0 && d > s.MaxWait {
		d = s.MaxWait
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		q, err := s.queueOf(in.QueueUrl)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		out := s.take(q, n, visibility, attrs)
		changed, closed := s.changed, s.closed
		// Wake again when the earliest hidden message turns visible.
		var next time.Duration = -1
		now := s.now()
		for _, m := range q.messages {
			if until := m.visibleAt.Sub(now); until > 0 && (next < 0 || until < next) {
				next = until
			}
		}
		s.mu.Unlock()
		if len(out) > 0 || d == 0 || closed {
			return map[string]any{"Messages": out}, nil
		}
		var visible <-chan time.Time
		var t *time.Timer
		if next > 0 {
			t = time.NewTimer(next)
			visible = t.C
		}
		select {
		case <-changed:
		case <-visible:
		case <-deadline.C:
			d = 0 // one last look, then answer empty
		case <-r.Context().Done():
			return map[string]any{"Messages": []messageJSON{}}, nil
		}
		if t != nil {
			t.Stop()
		}
	}
}

// take receives up to n visible messages, oldest first; s.mu must be held.
func (s *Server) take(q *queue, n int, visibility time.Duration, attrs map[string]bool) []messageJSON {
	now := s.now()
	out := []messageJSON{}
	for _, m := range q.messages {
		if len(out) == n {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		m.receives++
		m.handle = newID() + "#" + m.id
		m.visibleAt = now.Add(visibility)
		mj := messageJSON{MessageId: m.id, ReceiptHandle: m.handle, MD5OfBody: m.md5, Body: m.body}
		all := attrs["All"]
		for name, value := range map[string]string{
			"ApproximateReceiveCount": strconv.Itoa(m.receives),
			"SentTimestamp":           strconv.FormatInt(m.sentAt.UnixMilli(), 10),
		} {
			if all || attrs[name] {
				if mj.Attributes == nil {
					mj.Attributes = map[string]string{}
				}
				mj.Attributes[name] = value
			}
		}
		out = append(out, mj)
	}
	return out
}

func (s *Server) deleteMessage(body []byte) (any, error) {
	var in struct {
		QueueUrl      string
		ReceiptHandle string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueOf(in.QueueUrl)
	if err != nil {
		return nil, err
	}
	if in.ReceiptHandle == "" {
		return nil, clientError("MissingRequiredParameter", "MissingParameter", "ReceiptHandle is required")
	}
	for i, m := range q.messages {
		if m.handle == in.ReceiptHandle {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			q.deleted++
			return struct{}{}, nil
		}
	}
	// SQS accepts a stale handle of a message still in the queue and
	// refuses one it never issued; a message deleted already is gone
	// either way.
	_, id, ok := strings.Cut(in.ReceiptHandle, "#")
	for _, m := range q.messages {
		if ok && m.id == id {
			return struct{}{}, nil
		}
	}
	if ok {
		return struct{}{}, nil
	}
	return nil, clientError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", "The input receipt handle %q is not a valid receipt handle.", in.ReceiptHandle)
}
