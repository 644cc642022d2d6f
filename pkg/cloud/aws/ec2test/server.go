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
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"math"
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
)

// InstanceType is an instance type the server offers.
type InstanceType struct {
	Name            string
	VCPUs           int
	MemoryMiB       int64
	Arch            string // x86_64 or arm64
	MaxENIs         int
	IPv4PerENI      int
	GPUs            int
	GPUName         string
	GPUManufacturer string
	// Spot says whether the type can be bought as spot.
	Spot bool
	// Zones are the zones offering the type.
	Zones []string
	// OnDemandPrice is the type's Linux on-demand price in USD per hour, as
	// GetProducts reports it and Fleet's lowest-price strategy orders by.
	OnDemandPrice float64
}

// Subnet is a subnet.
type Subnet struct {
	ID, Zone, ZoneID, VpcID string
	AvailableIPs            int
	Tags                    map[string]string
}

// SecurityGroup is a security group.
type SecurityGroup struct {
	ID, Name string
	Tags     map[string]string
}

// Image is a machine image.
type Image struct {
	ID, Name, Owner string
	Arch            string // x86_64 or arm64
	Created         time.Time
	Tags            map[string]string
}

// SpotPrice is one entry of the spot price history.
type SpotPrice struct {
	InstanceType, Zone string
	Price              float64
	Time               time.Time
}

// BlockDevice is a launch template's block device mapping.
type BlockDevice struct {
	DeviceName          string
	VolumeSize          int
	VolumeType          string
	IOPS, Throughput    int
	Encrypted           *bool
	DeleteOnTermination *bool
	KMSKeyID            string
	SnapshotID          string
}

// LaunchTemplateData is what a launch template holds.
type LaunchTemplateData struct {
	ImageID          string
	UserData         string // base64, as sent
	InstanceProfile  string
	SecurityGroupIDs []string
	HTTPEndpoint     string
	HTTPTokens       string
	HTTPProtocolIPv6 string
	HopLimit         int
	BlockDevices     []BlockDevice
	// TagSpecs are tags by resource type (instance, volume, …).
	TagSpecs          map[string]map[string]string
	AssociatePublicIP *bool
	Monitoring        bool
}

// LaunchTemplate is a launch template.
type LaunchTemplate struct {
	ID, Name string
	Created  time.Time
	Tags     map[string]string
	Data     LaunchTemplateData
}

// Instance states.
const (
	StateRunning    = "running"
	StateTerminated = "terminated"
)

// Instance is a launched instance.
type Instance struct {
	ID, Type, Zone, SubnetID, ImageID string
	Arch                              string
	CapacityType                      string
	State                             string
	LaunchTime                        time.Time
	Tags, VolumeTags                  map[string]string
	LaunchTemplateID                  string
	PrivateIP, PrivateDNSName         string
	ClientToken                       string
	// SecurityGroupIDs are the instance's security groups: its launch
	// template's.
	SecurityGroupIDs []string
}

// ProviderID is the instance's Kubernetes provider ID, aws:///zone/id.
func (i Instance) ProviderID() string { return "aws:///" + i.Zone + "/" + i.ID }

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

	mu            sync.Mutex
	region        string
	pageSize      int
	latency       time.Duration
	listLag       time.Duration
	types         map[string]*InstanceType
	subnets       []Subnet
	groups        []SecurityGroup
	images        []Image
	spotPrices    []SpotPrice
	templates     map[string]*LaunchTemplate // by ID
	instances     map[string]*Instance
	instanceOrder []string
	params        map[string]string
	refused       map[capacityKey]string // → error code
	faults        map[string][]fault     // action → queued faults
	fleets        map[string][]byte      // client token → response
	calls         map[string]int
	requests      map[string][]map[string][]string
	terminated    []Instance // terminated since OnTerminate was last called
	seq           int
}

type capacityKey struct{ typ, zone, capacityType string }

type fault struct {
	status  int
	code    string
	message string
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

// AddInstanceType adds or replaces an instance type.
func (s *Server) AddInstanceType(it InstanceType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := it
	c.Zones = slices.Clone(it.Zones)
	s.types[it.Name] = &c
}

// AddCatalog adds instance types from catalog data (as catalog.InstanceTypes
// returns them): shape, zones, on-demand price, and a spot price history
// entry per zone with a spot offering.
func (s *Server) AddCatalog(types []cloud.InstanceType) {
	for _, ct := range types {
		it := InstanceType{
			Name: ct.Name, VCPUs: int(ct.CPU / 1000), MemoryMiB: ct.Memory >> 20, Arch: "x86_64",
			MaxENIs: ct.MaxENIs, IPv4PerENI: ct.IPv4PerENI, GPUs: int(ct.GPU), GPUName: ct.GPUName, GPUManufacturer: ct.GPUManufacturer,
		}
		if ct.Architecture == "arm64" {
			it.Arch = "arm64"
		}
		for _, o := range ct.Offerings {
			if !slices.Contains(it.Zones, o.Zone) {
				it.Zones = append(it.Zones, o.Zone)
			}
			switch o.CapacityType {
			case cloud.CapacityTypeOnDemand:
				it.OnDemandPrice = o.Price
			case cloud.CapacityTypeSpot:
				it.Spot = true
				s.SetSpotPrice(ct.Name, o.Zone, o.Price)
			}
		}
		s.AddInstanceType(it)
	}
}

// AddSubnet adds a subnet.
func (s *Server) AddSubnet(sn Subnet) { s.mu.Lock(); s.subnets = append(s.subnets, sn); s.mu.Unlock() }

// AddSecurityGroup adds a security group.
func (s *Server) AddSecurityGroup(g SecurityGroup) {
	s.mu.Lock()
	s.groups = append(s.groups, g)
	s.mu.Unlock()
}

// AddImage adds an image.
func (s *Server) AddImage(im Image) { s.mu.Lock(); s.images = append(s.images, im); s.mu.Unlock() }

// SetParameter sets an SSM parameter.
func (s *Server) SetParameter(name, value string) { s.mu.Lock(); s.params[name] = value; s.mu.Unlock() }

// SetSpotPrice appends a spot price history entry, effective now.
func (s *Server) SetSpotPrice(typ, zone string, price float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spotPrices = append(s.spotPrices, SpotPrice{InstanceType: typ, Zone: zone, Price: price, Time: s.now()})
}

// SetOnDemandPrice sets the on-demand price of a type.
func (s *Server) SetOnDemandPrice(typ string, price float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.types[typ]; it != nil {
		it.OnDemandPrice = price
	}
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

// Calls returns how many requests of action the server received, faults
// included.
func (s *Server) Calls(action string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[action] }

// Requests returns the form values of every request of action received.
func (s *Server) Requests(action string) []map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests[action])
}

// Instances returns every instance, terminated ones included, in launch order.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.instanceOrder))
	for _, id := range s.instanceOrder {
		out = append(out, cloneInstance(s.instances[id]))
	}
	return out
}

// Running returns the instances not terminated.
func (s *Server) Running() []Instance {
	return slices.DeleteFunc(s.Instances(), func(i Instance) bool { return i.State == StateTerminated })
}

// LaunchInstance adds a running instance directly, as if launched by
// someone else (e.g. a leaked instance for garbage collection tests).
func (s *Server) LaunchInstance(in Instance) Instance {
	s.mu.Lock()
	in = s.addInstance(in)
	hook := s.OnLaunch
	s.mu.Unlock()
	if hook != nil {
		hook(in)
	}
	return in
}

// Terminate terminates a running instance directly, as its owner, a spot
// interruption or a failed host would, and calls OnTerminate; it reports
// whether the instance was running.
func (s *Server) Terminate(id string) bool {
	s.mu.Lock()
	in := s.instances[id]
	if in == nil || in.State == StateTerminated {
		s.mu.Unlock()
		return false
	}
	in.State = StateTerminated
	c := cloneInstance(in)
	hook := s.OnTerminate
	s.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	return true
}

// LaunchTemplates returns every launch template.
func (s *Server) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]LaunchTemplate, 0, len(s.templates))
	for _, lt := range s.templates {
		out = append(out, *lt)
	}
	slices.SortFunc(out, func(a, b LaunchTemplate) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func cloneInstance(i *Instance) Instance {
	c := *i
	c.Tags = maps.Clone(i.Tags)
	c.VolumeTags = maps.Clone(i.VolumeTags)
	c.SecurityGroupIDs = slices.Clone(i.SecurityGroupIDs)
	return c
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
	s.mu.Unlock()
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

func sortedKeys[M ~map[string]V, V any](m M) []string { return slices.Sorted(maps.Keys(m)) }

func (s *Server) describeInstanceTypes(m meta, p params) (any, error) {
	want := p.list("InstanceType")
	var all []instanceTypeXML
	for _, name := range sortedKeys(s.types) {
		it := s.types[name]
		if len(want) > 0 && !slices.Contains(want, name) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "instance-type":
				return []string{name}, true
			case "processor-info.supported-architecture":
				return []string{it.Arch}, true
			case "supported-usage-class":
				return usageClasses(it), true
			case "current-generation":
				return []string{"true"}, true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := instanceTypeXML{InstanceType: name, CurrentGeneration: true}
		x.VCPU.DefaultVCpus = it.VCPUs
		x.Memory.SizeInMiB = it.MemoryMiB
		x.Processor.Architectures = itemsOf([]string{it.Arch})
		if it.GPUs > 0 {
			x.GPU = &gpuInfoXML{GPUs: itemsOf([]gpuXML{{Count: it.GPUs, Name: it.GPUName, Manufacturer: it.GPUManufacturer}})}
		}
		x.Network.MaxENIs = it.MaxENIs
		x.Network.IPv4PerENI = it.IPv4PerENI
		x.UsageClasses = itemsOf(usageClasses(it))
		all = append(all, x)
	}
	for _, name := range want {
		if s.types[name] == nil {
			return nil, badRequest("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", name)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypesXML{meta: m, InstanceTypes: itemsOf(pg), NextToken: next}, nil
}

func usageClasses(it *InstanceType) []string {
	if it.Spot {
		return []string{OnDemand, Spot}
	}
	return []string{OnDemand}
}

func (s *Server) describeInstanceTypeOfferings(m meta, p params) (any, error) {
	lt := cmp.Or(p.get("LocationType"), "region")
	var all []offeringXML
	for _, name := range sortedKeys(s.types) {
		it := s.types[name]
		var locations []string
		switch lt {
		case "region":
			locations = []string{s.region}
		case "availability-zone":
			locations = slices.Sorted(slices.Values(it.Zones))
		case "availability-zone-id":
			return nil, badRequest("InvalidParameterValue", "location type availability-zone-id is not supported by this server")
		default:
			return nil, badRequest("InvalidParameterValue", "Invalid location type: %s", lt)
		}
		for _, loc := range locations {
			ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
				switch f {
				case "instance-type":
					return []string{name}, true
				case "location":
					return []string{loc}, true
				}
				return nil, false
			})
			if err != nil {
				return nil, err
			}
			if ok {
				all = append(all, offeringXML{InstanceType: name, LocationType: lt, Location: loc})
			}
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypeOfferingsXML{meta: m, Offerings: itemsOf(pg), NextToken: next}, nil
}

const linuxProduct = "Linux/UNIX"

func (s *Server) describeSpotPriceHistory(m meta, p params) (any, error) {
	types := p.list("InstanceType")
	products := p.list("ProductDescription")
	zone := p.get("AvailabilityZone")
	var start, end time.Time
	if v := p.get("StartTime"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, badRequest("InvalidParameterValue", "bad StartTime %q", v)
		}
		start = t
	}
	end = s.now()
	if v := p.get("EndTime"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, badRequest("InvalidParameterValue", "bad EndTime %q", v)
		}
		end = t
	}
	if len(products) > 0 && !slices.ContainsFunc(products, func(pd string) bool { return strings.HasPrefix(pd, linuxProduct) }) {
		return describeSpotPriceHistoryXML{meta: m}, nil
	}
	// The entries in [start, end], plus for each pool the one in effect at start.
	type pool struct{ typ, zone string }
	inEffect := map[pool]int{}
	var picked []int
	for i, sp := range s.spotPrices {
		if (len(types) > 0 && !slices.Contains(types, sp.InstanceType)) || (zone != "" && zone != sp.Zone) || sp.Time.After(end) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "instance-type":
				return []string{sp.InstanceType}, true
			case "availability-zone":
				return []string{sp.Zone}, true
			case "product-description":
				return []string{linuxProduct}, true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !start.IsZero() && sp.Time.Before(start) {
			k := pool{sp.InstanceType, sp.Zone}
			if j, seen := inEffect[k]; !seen || !s.spotPrices[j].Time.After(sp.Time) {
				inEffect[k] = i
			}
			continue
		}
		picked = append(picked, i)
	}
	for _, i := range inEffect {
		picked = append(picked, i)
	}
	// Newest first, as EC2 answers.
	slices.SortStableFunc(picked, func(a, b int) int { return s.spotPrices[b].Time.Compare(s.spotPrices[a].Time) })
	all := make([]spotPriceXML, 0, len(picked))
	for _, i := range picked {
		sp := s.spotPrices[i]
		all = append(all, spotPriceXML{
			InstanceType: sp.InstanceType, ProductDescription: linuxProduct,
			SpotPrice: strconv.FormatFloat(sp.Price, 'f', 6, 64), Timestamp: timeXML(sp.Time), AvailabilityZone: sp.Zone,
		})
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeSpotPriceHistoryXML{meta: m, Prices: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) describeSubnets(m meta, p params) (any, error) {
	ids := p.list("SubnetId")
	var all []subnetXML
	for _, sn := range s.subnets {
		if len(ids) > 0 && !slices.Contains(ids, sn.ID) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "subnet-id":
				return []string{sn.ID}, true
			case "availability-zone":
				return []string{sn.Zone}, true
			case "vpc-id":
				return []string{sn.VpcID}, true
			case "state":
				return []string{"available"}, true
			}
			return tagField(f, sn.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, subnetXML{SubnetID: sn.ID, State: "available", VpcID: sn.VpcID, CidrBlock: "10.0.0.0/24",
				AvailableIPs: sn.AvailableIPs, AvailabilityZone: sn.Zone, ZoneID: sn.ZoneID, Tags: tagsXML(sn.Tags)})
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.subnets, func(sn Subnet) bool { return sn.ID == id }) {
			return nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeSubnetsXML{meta: m, Subnets: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) describeSecurityGroups(m meta, p params) (any, error) {
	ids, names := p.list("GroupId"), p.list("GroupName")
	var all []securityGroupXML
	for _, g := range s.groups {
		if (len(ids) > 0 && !slices.Contains(ids, g.ID)) || (len(names) > 0 && !slices.Contains(names, g.Name)) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "group-id":
				return []string{g.ID}, true
			case "group-name":
				return []string{g.Name}, true
			}
			return tagField(f, g.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, securityGroupXML{GroupID: g.ID, GroupName: g.Name, Description: g.Name, VpcID: "vpc-1", Tags: tagsXML(g.Tags)})
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.groups, func(g SecurityGroup) bool { return g.ID == id }) {
			return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeSecurityGroupsXML{meta: m, Groups: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) describeImages(m meta, p params) (any, error) {
	ids, owners := p.list("ImageId"), p.list("Owner")
	var all []imageXML
	for _, im := range s.images {
		if len(ids) > 0 && !slices.Contains(ids, im.ID) {
			continue
		}
		if len(owners) > 0 && !slices.ContainsFunc(owners, func(o string) bool { return o == im.Owner || (o == "self" && im.Owner == "self") }) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "image-id":
				return []string{im.ID}, true
			case "name":
				return []string{im.Name}, true
			case "owner-id", "owner-alias":
				return []string{im.Owner}, true
			case "architecture":
				return []string{im.Arch}, true
			case "state":
				return []string{"available"}, true
			}
			return tagField(f, im.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			all = append(all, imageXML{ImageID: im.ID, Name: im.Name, State: "available", OwnerID: im.Owner, Architecture: im.Arch,
				CreationDate: timeXML(im.Created), Tags: tagsXML(im.Tags)})
		}
	}
	for _, id := range ids {
		if !slices.ContainsFunc(s.images, func(im Image) bool { return im.ID == id }) {
			return nil, badRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeImagesXML{meta: m, Images: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) ltXML(lt *LaunchTemplate) launchTemplateXML {
	return launchTemplateXML{ID: lt.ID, Name: lt.Name, CreateTime: timeXML(lt.Created), DefaultVersion: 1, LatestVersion: 1, Tags: tagsXML(lt.Tags)}
}

func (s *Server) createLaunchTemplate(m meta, p params) (any, error) {
	name := p.get("LaunchTemplateName")
	if name == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	for _, lt := range s.templates {
		if lt.Name == name {
			return nil, badRequest("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
		}
	}
	d := p.sub("LaunchTemplateData")
	data := LaunchTemplateData{
		ImageID:          d.get("ImageId"),
		UserData:         d.get("UserData"),
		InstanceProfile:  cmp.Or(d.get("IamInstanceProfile.Name"), d.get("IamInstanceProfile.Arn")),
		SecurityGroupIDs: d.list("SecurityGroupId"),
		HTTPEndpoint:     d.get("MetadataOptions.HttpEndpoint"),
		HTTPTokens:       d.get("MetadataOptions.HttpTokens"),
		HTTPProtocolIPv6: d.get("MetadataOptions.HttpProtocolIpv6"),
		HopLimit:         d.int("MetadataOptions.HttpPutResponseHopLimit", 0),
		TagSpecs:         d.tagSpecs("TagSpecification"),
		Monitoring:       d.bool("Monitoring.Enabled"),
	}
	for _, b := range d.structs("BlockDeviceMapping") {
		bd := BlockDevice{DeviceName: b.get("DeviceName"), VolumeSize: b.int("Ebs.VolumeSize", 0), VolumeType: b.get("Ebs.VolumeType"),
			IOPS: b.int("Ebs.Iops", 0), Throughput: b.int("Ebs.Throughput", 0), KMSKeyID: b.get("Ebs.KmsKeyId"), SnapshotID: b.get("Ebs.SnapshotId")}
		if b.has("Ebs.Encrypted") {
			v := b.bool("Ebs.Encrypted")
			bd.Encrypted = &v
		}
		if b.has("Ebs.DeleteOnTermination") {
			v := b.bool("Ebs.DeleteOnTermination")
			bd.DeleteOnTermination = &v
		}
		data.BlockDevices = append(data.BlockDevices, bd)
	}
	for _, ni := range d.structs("NetworkInterface") {
		if ni.has("AssociatePublicIpAddress") {
			v := ni.bool("AssociatePublicIpAddress")
			data.AssociatePublicIP = &v
		}
		data.SecurityGroupIDs = append(data.SecurityGroupIDs, ni.list("SecurityGroupId")...)
	}
	if data.ImageID == "" {
		return nil, badRequest("InvalidParameterValue", "LaunchTemplateData.ImageId is required by this server")
	}
	if !slices.ContainsFunc(s.images, func(im Image) bool { return im.ID == data.ImageID }) {
		return nil, badRequest("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", data.ImageID)
	}
	s.seq++
	lt := &LaunchTemplate{ID: fmt.Sprintf("lt-%017x", s.seq), Name: name, Created: s.now(), Data: data, Tags: p.tagSpecs("TagSpecification")["launch-template"]}
	s.templates[lt.ID] = lt
	return createLaunchTemplateXML{meta: m, LaunchTemplate: s.ltXML(lt)}, nil
}

func (s *Server) describeLaunchTemplates(m meta, p params) (any, error) {
	ids, names := p.list("LaunchTemplateId"), p.list("LaunchTemplateName")
	var all []launchTemplateXML
	found := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(s.templates)) {
		lt := s.templates[id]
		if (len(ids) > 0 && !slices.Contains(ids, lt.ID)) || (len(names) > 0 && !slices.Contains(names, lt.Name)) {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "launch-template-name":
				return []string{lt.Name}, true
			}
			return tagField(f, lt.Tags)
		})
		if err != nil {
			return nil, err
		}
		if ok {
			found[lt.ID], found[lt.Name] = true, true
			all = append(all, s.ltXML(lt))
		}
	}
	for _, n := range names {
		if !found[n] {
			return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
	}
	for _, id := range ids {
		if !found[id] {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeLaunchTemplatesXML{meta: m, LaunchTemplates: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) deleteLaunchTemplate(m meta, p params) (any, error) {
	id, name := p.get("LaunchTemplateId"), p.get("LaunchTemplateName")
	for k, lt := range s.templates {
		if (id != "" && lt.ID == id) || (name != "" && lt.Name == name) {
			delete(s.templates, k)
			return createLaunchTemplateXML{meta: m, LaunchTemplate: s.ltXML(lt)}, nil
		}
	}
	if id != "" {
		return nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	return nil, badRequest("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
}

// fleetCandidate is one override of a CreateFleet request.
type fleetCandidate struct {
	lt                       *LaunchTemplate
	version                  string
	typ, subnet, zone, image string
	priority                 float64
	order                    int
}

func (s *Server) createFleet(m meta, p params) (any, []Instance, error) {
	if t := p.get("Type"); t != "instant" {
		return nil, nil, badRequest("InvalidParameterValue", "this server only supports fleets of type instant, not %q", t)
	}
	tc := p.sub("TargetCapacitySpecification")
	total := tc.int("TotalTargetCapacity", 0)
	if total < 1 {
		return nil, nil, badRequest("InvalidParameterValue", "TotalTargetCapacity must be at least 1")
	}
	capacityType := tc.get("DefaultTargetCapacityType")
	if capacityType != OnDemand && capacityType != Spot {
		return nil, nil, badRequest("InvalidParameterValue", "DefaultTargetCapacityType must be on-demand or spot, not %q", capacityType)
	}
	strategy := p.get("OnDemandOptions.AllocationStrategy")
	if capacityType == Spot {
		strategy = p.get("SpotOptions.AllocationStrategy")
	}
	var cands []fleetCandidate
	for _, cfg := range p.structs("LaunchTemplateConfigs") {
		spec := cfg.sub("LaunchTemplateSpecification")
		var lt *LaunchTemplate
		for _, t := range s.templates {
			if (spec.get("LaunchTemplateId") != "" && t.ID == spec.get("LaunchTemplateId")) || (spec.get("LaunchTemplateName") != "" && t.Name == spec.get("LaunchTemplateName")) {
				lt = t
			}
		}
		if lt == nil {
			return nil, nil, badRequest("InvalidLaunchTemplateId.NotFound", "The specified launch template does not exist.")
		}
		overrides := cfg.structs("Overrides")
		if len(overrides) == 0 {
			return nil, nil, badRequest("InvalidParameterValue", "this server needs overrides with an instance type and subnet")
		}
		for _, o := range overrides {
			c := fleetCandidate{lt: lt, version: spec.get("Version"), typ: o.get("InstanceType"), subnet: o.get("SubnetId"),
				zone: o.get("AvailabilityZone"), image: cmp.Or(o.get("ImageId"), lt.Data.ImageID), order: len(cands)}
			if v, err := strconv.ParseFloat(o.get("Priority"), 64); err == nil {
				c.priority = v
			}
			if c.subnet != "" {
				i := slices.IndexFunc(s.subnets, func(sn Subnet) bool { return sn.ID == c.subnet })
				if i < 0 {
					return nil, nil, badRequest("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", c.subnet)
				}
				c.zone = s.subnets[i].Zone
			}
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil, nil, badRequest("InvalidParameterValue", "LaunchTemplateConfigs is required")
	}
	price := func(c fleetCandidate) float64 {
		it := s.types[c.typ]
		if it == nil {
			return math.Inf(1)
		}
		if capacityType == Spot {
			if sp, ok := s.latestSpot(c.typ, c.zone); ok {
				return sp
			}
		}
		if it.OnDemandPrice > 0 {
			return it.OnDemandPrice
		}
		return math.Inf(1)
	}
	switch strategy {
	case "prioritized", "capacity-optimized-prioritized":
		slices.SortStableFunc(cands, func(a, b fleetCandidate) int { return cmp.Compare(a.priority, b.priority) })
	default: // lowest-price, price-capacity-optimized, capacity-optimized
		slices.SortStableFunc(cands, func(a, b fleetCandidate) int { return cmp.Compare(price(a), price(b)) })
	}
	instanceTags := maps.Clone(cands[0].lt.Data.TagSpecs["instance"])
	volumeTags := maps.Clone(cands[0].lt.Data.TagSpecs["volume"])
	specs := p.tagSpecs("TagSpecification")
	if instanceTags == nil {
		instanceTags = map[string]string{}
	}
	maps.Copy(instanceTags, specs["instance"])
	if volumeTags == nil {
		volumeTags = map[string]string{}
	}
	maps.Copy(volumeTags, specs["volume"])

	s.seq++
	resp := createFleetXML{meta: m, FleetID: fmt.Sprintf("fleet-%08x-0000-0000-0000-000000000000", s.seq)}
	var errs []fleetErrorXML
	var insts []fleetInstanceXML
	var launched []Instance
	overridesXML := func(c fleetCandidate) fleetOverridesXML {
		var x fleetOverridesXML
		x.Spec.LaunchTemplateID = c.lt.ID
		x.Spec.Version = c.version
		x.Overrides.InstanceType = c.typ
		x.Overrides.SubnetID = c.subnet
		x.Overrides.AvailabilityZone = c.zone
		return x
	}
	for _, c := range cands {
		if len(launched) == total {
			break
		}
		it := s.types[c.typ]
		switch {
		case it == nil || !slices.Contains(it.Zones, c.zone):
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: overridesXML(c), Lifecycle: capacityType, ErrorCode: "Unsupported",
				ErrorMessage: fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", c.typ, c.zone)})
			continue
		case capacityType == Spot && !it.Spot:
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: overridesXML(c), Lifecycle: capacityType, ErrorCode: "UnsupportedOperation",
				ErrorMessage: fmt.Sprintf("The instance type %s does not support spot.", c.typ)})
			continue
		}
		if code, refused := s.refused[capacityKey{c.typ, c.zone, capacityType}]; refused {
			errs = append(errs, fleetErrorXML{LaunchTemplateAndOverrides: overridesXML(c), Lifecycle: capacityType, ErrorCode: code,
				ErrorMessage: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", c.typ, c.zone)})
			continue
		}
		var ids []string
		for len(launched) < total {
			in := s.addInstance(Instance{Type: c.typ, Zone: c.zone, SubnetID: c.subnet, ImageID: c.image, Arch: it.Arch, CapacityType: capacityType,
				Tags: maps.Clone(instanceTags), VolumeTags: maps.Clone(volumeTags), LaunchTemplateID: c.lt.ID, ClientToken: p.get("ClientToken"),
				SecurityGroupIDs: slices.Clone(c.lt.Data.SecurityGroupIDs)})
			launched = append(launched, in)
			ids = append(ids, in.ID)
		}
		insts = append(insts, fleetInstanceXML{LaunchTemplateAndOverrides: overridesXML(c), Lifecycle: capacityType, InstanceIDs: itemsOf(ids), InstanceType: c.typ})
	}
	resp.Errors = itemsOf(errs)
	resp.Instances = itemsOf(insts)
	return resp, launched, nil
}

func (s *Server) latestSpot(typ, zone string) (float64, bool) {
	var best SpotPrice
	found := false
	now := s.now()
	for _, sp := range s.spotPrices {
		if sp.InstanceType == typ && sp.Zone == zone && !sp.Time.After(now) && (!found || !sp.Time.Before(best.Time)) {
			best, found = sp, true
		}
	}
	return best.Price, found
}

// addInstance stores a new running instance; s.mu must be held.
func (s *Server) addInstance(in Instance) Instance {
	s.seq++
	if in.ID == "" {
		in.ID = fmt.Sprintf("i-%017x", s.seq)
	}
	in.State = StateRunning
	if in.LaunchTime.IsZero() {
		in.LaunchTime = s.now()
	}
	if in.CapacityType == "" {
		in.CapacityType = OnDemand
	}
	in.PrivateIP = fmt.Sprintf("10.0.%d.%d", (s.seq/250)%250, s.seq%250+1)
	in.PrivateDNSName = "ip-" + strings.ReplaceAll(in.PrivateIP, ".", "-") + "." + s.region + ".compute.internal"
	c := in
	s.instances[in.ID] = &c
	s.instanceOrder = append(s.instanceOrder, in.ID)
	return cloneInstance(&c)
}

var stateCodes = map[string]int{"pending": 0, StateRunning: 16, "shutting-down": 32, StateTerminated: 48, "stopping": 64, "stopped": 80}

func (s *Server) describeInstances(m meta, p params) (any, error) {
	ids := p.list("InstanceId")
	for _, id := range ids {
		if s.instances[id] == nil {
			return nil, badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var all []reservationXML
	for _, id := range s.instanceOrder {
		in := s.instances[id]
		if len(ids) > 0 && !slices.Contains(ids, id) {
			continue
		}
		if len(ids) == 0 && s.now().Sub(in.LaunchTime) < s.listLag {
			continue
		}
		ok, err := matchFilters(p.filters(), func(f string) ([]string, bool) {
			switch f {
			case "instance-id":
				return []string{in.ID}, true
			case "instance-state-name":
				return []string{in.State}, true
			case "instance-type":
				return []string{in.Type}, true
			case "availability-zone":
				return []string{in.Zone}, true
			case "client-token":
				return []string{in.ClientToken}, true
			case "instance-lifecycle":
				if in.CapacityType == Spot {
					return []string{Spot}, true
				}
				return nil, true
			}
			return tagField(f, in.Tags)
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := instanceXML{InstanceID: in.ID, ImageID: in.ImageID, State: stateXML{Code: stateCodes[in.State], Name: in.State}, PrivateDNSName: in.PrivateDNSName,
			InstanceType: in.Type, LaunchTime: timeXML(in.LaunchTime), SubnetID: in.SubnetID, VpcID: "vpc-1", PrivateIPAddress: in.PrivateIP,
			Architecture: in.Arch, ClientToken: in.ClientToken, Tags: tagsXML(in.Tags)}
		x.Placement.AvailabilityZone = in.Zone
		if len(in.SecurityGroupIDs) > 0 {
			groups := make([]groupXML, len(in.SecurityGroupIDs))
			for i, id := range in.SecurityGroupIDs {
				groups[i] = groupXML{ID: id}
				if j := slices.IndexFunc(s.groups, func(g SecurityGroup) bool { return g.ID == id }); j >= 0 {
					groups[i].Name = s.groups[j].Name
				}
			}
			x.Groups = itemsOf(groups)
		}
		if in.CapacityType == Spot {
			x.InstanceLifecycle = Spot
			x.SpotRequestID = "sir-" + strings.TrimPrefix(in.ID, "i-")
		}
		all = append(all, reservationXML{ReservationID: "r-" + strings.TrimPrefix(in.ID, "i-"), OwnerID: "123456789012", Instances: itemsOf([]instanceXML{x})})
	}
	pg, next, err := page(all, p, s.pageSize)
	if err != nil {
		return nil, err
	}
	return describeInstancesXML{meta: m, Reservations: itemsOf(pg), NextToken: next}, nil
}

func (s *Server) terminateInstances(m meta, p params) (any, error) {
	ids := p.list("InstanceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter InstanceId")
	}
	for _, id := range ids {
		if s.instances[id] == nil {
			return nil, badRequest("InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
		}
	}
	var out []stateChangeXML
	for _, id := range ids {
		in := s.instances[id]
		prev := in.State
		in.State = StateTerminated
		if prev != StateTerminated {
			s.terminated = append(s.terminated, cloneInstance(in))
		}
		out = append(out, stateChangeXML{InstanceID: id, Previous: stateXML{Code: stateCodes[prev], Name: prev}, Current: stateXML{Code: 48, Name: StateTerminated}})
	}
	return terminateInstancesXML{meta: m, Instances: itemsOf(out)}, nil
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

func (s *Server) getParameter(body []byte) (any, error) {
	var in struct{ Name string }
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badRequest("SerializationException", "bad JSON: %v", err)
	}
	s.mu.Lock()
	v, ok := s.params[in.Name]
	s.mu.Unlock()
	if !ok {
		return nil, badRequest("ParameterNotFound", "")
	}
	return map[string]any{"Parameter": map[string]any{"Name": in.Name, "Type": "String", "Value": v, "Version": 1, "DataType": "text"}}, nil
}

// getProducts answers GetProducts for AmazonEC2 with one Linux, shared,
// on-demand product per instance type with a price, honouring TERM_MATCH
// filters on the product attributes.
func (s *Server) getProducts(body []byte) (any, error) {
	var in struct {
		ServiceCode string
		Filters     []struct{ Type, Field, Value string }
		NextToken   string
		MaxResults  int
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badRequest("SerializationException", "bad JSON: %v", err)
	}
	if in.ServiceCode != "AmazonEC2" {
		return nil, badRequest("InvalidParameterException", "unknown service code %q", in.ServiceCode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []string
	for _, name := range sortedKeys(s.types) {
		it := s.types[name]
		if it.OnDemandPrice <= 0 {
			continue
		}
		attrs := map[string]string{
			"instanceType": name, "regionCode": s.region, "operatingSystem": "Linux", "tenancy": "Shared",
			"preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required", "marketoption": "OnDemand",
		}
		match := true
		for _, f := range in.Filters {
			if !strings.EqualFold(attrs[f.Field], f.Value) {
				match = false
			}
		}
		if !match {
			continue
		}
		sku := strings.ToUpper(strings.ReplaceAll(name, ".", "")) + "SKU"
		doc := map[string]any{
			"product":     map[string]any{"productFamily": "Compute Instance", "sku": sku, "attributes": attrs},
			"serviceCode": "AmazonEC2",
			"terms": map[string]any{"OnDemand": map[string]any{sku + ".JRTCKXETXF": map[string]any{
				"sku": sku, "offerTermCode": "JRTCKXETXF",
				"priceDimensions": map[string]any{sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
					"unit": "Hrs", "pricePerUnit": map[string]string{"USD": strconv.FormatFloat(it.OnDemandPrice, 'f', 10, 64)},
				}},
			}}},
		}
		b, _ := json.Marshal(doc)
		all = append(all, string(b))
	}
	size := s.pageSize
	if in.MaxResults > 0 {
		size = min(size, in.MaxResults)
	}
	start := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "page-"))
		if err != nil || n < 0 || n > len(all) {
			return nil, badRequest("InvalidNextTokenException", "bad token")
		}
		start = n
	}
	end := min(start+size, len(all))
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": all[start:end]}
	if end < len(all) {
		out["NextToken"] = "page-" + strconv.Itoa(end)
	}
	return out, nil
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
