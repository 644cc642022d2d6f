package snapshot

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"regexp"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// APIError is a request to the cluster that failed. Its message is one line
// that names what could not be read and the next step, e.g.
//
//	cannot list nodes at cluster scope: user "jane" is forbidden; ask for "list" on "nodes" (RBAC)
type APIError struct {
	// Verb and Resource say what was asked: "list", "nodes" or
	// "nodepools.karpenter.sh"; "discover", "karpenter.sh/v1".
	Verb, Resource string
	// Namespace is "" for a request at cluster scope.
	Namespace string
	// Host is the API server's URL and Timeout the request timeout, for the message.
	Host    string
	Timeout time.Duration
	Err     error
}

// Unwrap returns the client's error.
func (e *APIError) Unwrap() error { return e.Err }

// forbiddenUser finds the user in the API server's Forbidden message.
var forbiddenUser = regexp.MustCompile(`User "([^"]*)"`)

func (e *APIError) Error() string {
	what := fmt.Sprintf("cannot %s %s", e.Verb, e.Resource)
	scope := " at cluster scope"
	if e.Namespace != "" {
		scope = fmt.Sprintf(" in namespace %q", e.Namespace)
	}
	at := ""
	if e.Host != "" {
		at = " at " + e.Host
	}
	err := e.Err
	var (
		netErr  net.Error
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
		dns     *net.DNSError
	)
	switch {
	case apierrors.IsForbidden(err):
		user := "you are"
		if m := forbiddenUser.FindStringSubmatch(err.Error()); m != nil {
			user = fmt.Sprintf("user %q is", m[1])
		}
		return oneLine(fmt.Sprintf("%s%s: %s forbidden; ask for %q on %q (RBAC)", what, scope, user, e.Verb, e.Resource))
	case apierrors.IsUnauthorized(err):
		return oneLine(fmt.Sprintf("%s: the cluster%s rejected your credentials (401 Unauthorized); they may have expired: log in again or refresh the kubeconfig (--kubeconfig, --context)", what, at))
	case errors.Is(err, syscall.ECONNREFUSED):
		return oneLine(fmt.Sprintf("%s: cannot reach the cluster%s: connection refused; check that the API server is up and that --kubeconfig/--context point at it", what, at))
	case errors.As(err, &dns):
		return oneLine(fmt.Sprintf("%s: cannot reach the cluster%s: host %q not found; check the server address in the kubeconfig and your network or VPN", what, at, dns.Name))
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host):
		return oneLine(fmt.Sprintf("%s: cannot trust the cluster%s: %v; check the kubeconfig's certificate-authority data", what, at, err))
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout(), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err):
		within := ""
		if e.Timeout > 0 {
			within = " within " + e.Timeout.String()
		}
		return oneLine(fmt.Sprintf("%s: the cluster%s did not answer%s; check that it is up and reachable, or raise --request-timeout", what, at, within))
	case errors.Is(err, context.Canceled):
		return what + ": interrupted"
	}
	return oneLine(fmt.Sprintf("%s%s: %v", what, scope, err))
}
