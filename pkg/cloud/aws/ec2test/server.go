// Package ec2test is an in-process server that speaks enough of the EC2 Query
// protocol — plus SSM GetParameter and Pricing GetProducts (JSON 1.1) — for
// the real aws-sdk-go-v2 clients to run against it: the SDK's own
// serializers and XML/JSON deserializers are exercised, not replaced by an
// interface fake.
//
// The server is stateful (instance types and offerings, subnets, security
// groups, images, launch templates, instances, spot price history, SSM
// parameters, on-demand prices), pages with NextToken, answers errors with
// the EC2 error document, refuses DryRun requests with DryRunOperation (HTTP
// 412), and can be scripted to fail: insufficient capacity per instance type
// × zone × capacity type, throttling, server errors and latency. OnLaunch
// lets an end-to-end test play the kubelet's join for each new instance.
package ec2test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/cloud"
)

// Capacity types as EC2 Fleet spells them.
const (
	OnDemand = "on-demand"
	Spot     = "spot"
	// CapacityBlock is the capacity type (and instance lifecycle) of
	// instances launched into a capacity block.
	CapacityBlock = "capacity-block"
)

// Server is the fake. Its zero value is not usable; call New.
type Server struct {
	// OnLaunch, when set, is called (outside the server's lock) for every
	// instance a CreateFleet launched.
	OnLaunch func(Instance)
	// OnTerminate, when set, is called (outside the server's lock) for
	// every running instance TerminateInstances terminated, e.g. to stop the
	// kubelet an end-to-end test plays for it.
	OnTerminate func(Instance)
	// Now is the server's clock (time.Now when nil).
	Now func() time.Time

	mu                sync.Mutex
	beforeAction      func(action string)
	region            string
	pageSize          int
	latency           time.Duration
	listLag           time.Duration
	types             map[string]*InstanceType
	subnets           []Subnet
	reservations      []*CapacityReservation
	reservedInstances []*ReservedInstances
	groups            []SecurityGroup
	images            []Image
	spotPrices        []SpotPrice
	templates         map[string]*LaunchTemplate // by ID
	instances         map[string]*Instance
	instanceOrder     []string
	params            map[string]string
	refused           map[capacityKey]string // → error code
	faults            map[string][]fault     // action → queued faults
	fleets            map[string][]byte      // client token → response
	calls             map[string]int
	requests          map[string][]map[string][]string
	terminated        []Instance // terminated since OnTerminate was last called
	seq               int
}

// New returns a server for region with nothing in it.
func New(region string) *Server {
	return &Server{
		region:    region,
		pageSize:  100,
		types:     map[string]*InstanceType{},
		templates: map[string]*LaunchTemplate{},
		instances: map[string]*Instance{},
		params:    map[string]string{},
		refused:   map[capacityKey]string{},
		faults:    map[string][]fault{},
		fleets:    map[string][]byte{},
		calls:     map[string]int{},
		requests:  map[string][]map[string][]string{},
	}
}

// Region is the server's region.
func (s *Server) Region() string { return s.region }

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SetBeforeAction makes the server call fn (outside its lock) with each
// Query-protocol request's action before it acts on it (nil: none): what
// someone else does between a client's calls, such as taking the last
// instance of a capacity reservation, goes there.
func (s *Server) SetBeforeAction(fn func(action string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeAction = fn
}

// SetPageSize sets the most items a Describe* page holds (100 by default).
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = max(n, 1); s.mu.Unlock() }

// SetLatency delays every response by d.
func (s *Server) SetLatency(d time.Duration) { s.mu.Lock(); s.latency = d; s.mu.Unlock() }

// SetListLag makes DescribeInstances without instance IDs leave out the
// instances launched less than d ago, as EC2's eventual consistency may:
// a search by tag right after a launch can miss the new instance, and
// only CreateFleet's ClientToken then keeps a retry from launching
// another.
func (s *Server) SetListLag(d time.Duration) { s.mu.Lock(); s.listLag = d; s.mu.Unlock() }

// Calls returns how many requests of action the server received, faults
// included.
func (s *Server) Calls(action string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[action] }

// Requests returns the form values of every request of action received.
func (s *Server) Requests(action string) []map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests[action])
}

// maxBody bounds request bodies.
const maxBody = 4 << 20

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.serveJSON(w, r, target)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		writeEC2Error(w, badRequest("MalformedQueryString", "cannot parse the request: %v", err))
		return
	}
	p := newParams(r.Form)
	action := p.get("Action")
	s.mu.Lock()
	s.calls[action]++
	s.requests[action] = append(s.requests[action], maps.Clone(r.Form))
	f, faulted := s.takeFault(action)
	before := s.beforeAction
	s.mu.Unlock()
	if before != nil {
		before(action)
	}
	if faulted {
		writeEC2Error(w, &apiError{status: f.status, code: f.code, message: f.message})
		return
	}
	if p.bool("DryRun") {
		writeEC2Error(w, &apiError{status: http.StatusPreconditionFailed, code: "DryRunOperation", message: "Request would have succeeded, but DryRun flag is set."})
		return
	}
	body, launched, err := s.dispatch(action, p)
	if err != nil {
		writeEC2Error(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	s.mu.Lock()
	hook, onTerminate := s.OnLaunch, s.OnTerminate
	terminated := s.terminated
	s.terminated = nil
	s.mu.Unlock()
	if hook != nil {
		for _, in := range launched {
			hook(in)
		}
	}
	if onTerminate != nil {
		for _, in := range terminated {
			onTerminate(in)
		}
	}
}

func encodeResponse(action string, v any) ([]byte, error) {
	var b strings.Builder
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"}, Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}}}
	if err := enc.EncodeElement(v, start); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func (s *Server) dispatch(action string, p params) ([]byte, []Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	m := meta{RequestID: fmt.Sprintf("req-%d", s.seq)}
	var (
		v        any
		launched []Instance
		err      error
	)
	switch action {
	case "DescribeInstanceTypes":
		v, err = s.describeInstanceTypes(m, p)
	case "DescribeInstanceTypeOfferings":
		v, err = s.describeInstanceTypeOfferings(m, p)
	case "DescribeSpotPriceHistory":
		v, err = s.describeSpotPriceHistory(m, p)
	case "DescribeSubnets":
		v, err = s.describeSubnets(m, p)
	case "DescribeCapacityReservations":
		v, err = s.describeCapacityReservations(m, p)
	case "DescribeReservedInstances":
		v, err = s.describeReservedInstances(m, p)
	case "DescribeSecurityGroups":
		v, err = s.describeSecurityGroups(m, p)
	case "DescribeImages":
		v, err = s.describeImages(m, p)
	case "CreateLaunchTemplate":
		v, err = s.createLaunchTemplate(m, p)
	case "DescribeLaunchTemplates":
		v, err = s.describeLaunchTemplates(m, p)
	case "DeleteLaunchTemplate":
		v, err = s.deleteLaunchTemplate(m, p)
	case "CreateFleet":
		if token := p.get("ClientToken"); token != "" {
			if prev, ok := s.fleets[token]; ok {
				return prev, nil, nil
			}
		}
		v, launched, err = s.createFleet(m, p)
	case "DescribeInstances":
		v, err = s.describeInstances(m, p)
	case "TerminateInstances":
		v, err = s.terminateInstances(m, p)
	case "":
		return nil, nil, badRequest("MissingAction", "the request must contain the parameter Action")
	default:
		return nil, nil, badRequest("InvalidAction", "The action %s is not valid for this web service.", action)
	}
	if err != nil {
		return nil, nil, err
	}
	out, err := encodeResponse(action, v)
	if err != nil {
		return nil, nil, err
	}
	if action == "CreateFleet" {
		if token := p.get("ClientToken"); token != "" {
			s.fleets[token] = out
		}
	}
	return out, launched, nil
}

// page cuts one page out of all: the token is the offset of the page.
func page[T any](all []T, p params, size int) ([]T, string, error) {
	if mr := p.int("MaxResults", 0); mr > 0 {
		size = min(size, mr)
	}
	start := 0
	if tok := p.get("NextToken"); tok != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(tok, "page-"))
		if err != nil || !strings.HasPrefix(tok, "page-") || n < 0 || n > len(all) {
			return nil, "", badRequest("InvalidNextToken", "The token '%s' is invalid.", tok)
		}
		start = n
	}
	end := min(start+size, len(all))
	next := ""
	if end < len(all) {
		next = "page-" + strconv.Itoa(end)
	}
	return all[start:end], next, nil
}

// serveJSON answers the JSON 1.1 services: SSM and Pricing.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, target string) {
	service, op, _ := strings.Cut(target, ".")
	var action string
	switch service {
	case "AmazonSSM":
		action = "ssm:" + op
	case "AWSPriceListService":
		action = "pricing:" + op
	default:
		writeJSONError(w, badRequest("UnknownOperationException", "unknown target %s", target))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeJSONError(w, badRequest("SerializationException", "cannot read the body: %v", err))
		return
	}
	s.mu.Lock()
	s.calls[action]++
	f, faulted := s.takeFault(action)
	s.mu.Unlock()
	if faulted {
		writeJSONError(w, &apiError{status: f.status, code: f.code, message: f.message})
		return
	}
	var out any
	switch action {
	case "ssm:GetParameter":
		out, err = s.getParameter(body)
	case "pricing:GetProducts":
		out, err = s.getProducts(body)
	default:
		err = badRequest("UnknownOperationException", "unknown operation %s", target)
	}
	if err != nil {
		writeJSONError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// SeedAccount fills the server with a small account ready for an
// EC2NodeClass that selects by the tag karpenter.sh/discovery=cluster and
// the alias al2023@latest (or bottlerocket@latest): the instance types
// given (e.g. from the embedded catalog, with their zones and prices), one
// subnet per zone (subnet-<zone>), the security group sg-nodes, AL2023 and
// Bottlerocket images for both architectures, and the public SSM
// parameters that name them for k8sVersion.
func (s *Server) SeedAccount(cluster, k8sVersion string, types []cloud.InstanceType) {
	s.AddCatalog(types)
	discovery := map[string]string{"karpenter.sh/discovery": cluster}
	zones := map[string]bool{}
	for _, it := range types {
		for _, o := range it.Offerings {
			zones[o.Zone] = true
		}
	}
	for i, z := range slices.Sorted(maps.Keys(zones)) {
		s.AddSubnet(Subnet{ID: "subnet-" + z, Zone: z, ZoneID: fmt.Sprintf("az%d", i+1), VpcID: "vpc-1", AvailableIPs: 4000, Tags: discovery})
	}
	s.AddSecurityGroup(SecurityGroup{ID: "sg-nodes", Name: cluster + "-nodes", Tags: discovery})
	created := s.now().Add(-24 * time.Hour)
	for _, a := range []struct{ arch, ssm string }{{"x86_64", "x86_64"}, {"arm64", "arm64"}} {
		al, br := "ami-al2023"+strings.ReplaceAll(a.arch, "_", ""), "ami-bottlerocket"+strings.ReplaceAll(a.arch, "_", "")
		s.AddImage(Image{ID: al, Name: "amazon-eks-node-al2023-" + a.arch + "-standard-" + k8sVersion, Owner: "amazon", Arch: a.arch, Created: created})
		s.AddImage(Image{ID: br, Name: "bottlerocket-aws-k8s-" + k8sVersion + "-" + a.arch, Owner: "amazon", Arch: a.arch, Created: created})
		s.SetParameter("/aws/service/eks/optimized-ami/"+k8sVersion+"/amazon-linux-2023/"+a.ssm+"/standard/recommended/image_id", al)
		s.SetParameter("/aws/service/bottlerocket/aws-k8s-"+k8sVersion+"/"+a.ssm+"/latest/image_id", br)
	}
}
