package ec2test

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
)

type capacityKey struct{ typ, zone, capacityType string }

type fault struct {
	status  int
	code    string
	message string
}

// RefuseCapacity makes CreateFleet refuse typ in zone for capacityType with
// code (InsufficientInstanceCapacity when empty) until AllowCapacity.
func (s *Server) RefuseCapacity(typ, zone, capacityType, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[capacityKey{typ, zone, capacityType}] = cmp.Or(code, "InsufficientInstanceCapacity")
}

// AllowCapacity undoes RefuseCapacity.
func (s *Server) AllowCapacity(typ, zone, capacityType string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refused, capacityKey{typ, zone, capacityType})
}

// FailNext makes the next n calls of action (an EC2 action such as
// "CreateFleet", "ssm:GetParameter", "pricing:GetProducts", or "*" for any)
// fail with the HTTP status and error code.
func (s *Server) FailNext(action string, n, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[action] = append(s.faults[action], fault{status: status, code: code, message: "injected fault"})
	}
}

// Throttle makes the next n calls of action fail with RequestLimitExceeded
// (ThrottlingException for the JSON services).
func (s *Server) Throttle(action string, n int) {
	code := "RequestLimitExceeded"
	if strings.Contains(action, ":") {
		code = "ThrottlingException"
	}
	s.FailNext(action, n, http.StatusServiceUnavailable, code)
}

// apiError is an error answered with the EC2 error document (or the JSON
// error body for JSON services).
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}

func (s *Server) takeFault(action string) (fault, bool) {
	for _, key := range []string{action, "*"} {
		if q := s.faults[key]; len(q) > 0 {
			s.faults[key] = q[1:]
			return q[0], true
		}
	}
	return fault{}, false
}

func writeEC2Error(w http.ResponseWriter, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = &apiError{status: http.StatusInternalServerError, code: "InternalError", message: err.Error()}
	}
	var doc errorResponse
	doc.Errors = append(doc.Errors, struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}{e.code, e.message})
	doc.RequestID = "req-error"
	out, _ := xml.Marshal(doc)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	_, _ = w.Write(append([]byte(xml.Header), out...))
}

func writeJSONError(w http.ResponseWriter, err error) {
	e, ok := err.(*apiError)
	if !ok {
		e = &apiError{status: http.StatusInternalServerError, code: "InternalServerError", message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", e.code)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.message})
}
