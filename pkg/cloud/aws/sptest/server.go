// Package sptest is an in-process server that speaks enough of the AWS
// Savings Plans REST-JSON protocol (POST /DescribeSavingsPlans, POST
// /DescribeSavingsPlanRates, JSON bodies) for the real aws-sdk-go-v2
// savingsplans client to run against it: plans filtered by state and id,
// and each plan's rates, paginated with nextToken. Tests reach it only
// through the SDK over HTTP, so the SDK's serializers and deserializers
// run as in production.
package sptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
)

// Plan is a Savings Plan: Commitment dollars an hour, of Type "Compute" or
// "EC2Instance" (Family and Region set), and its Rates, by instance type,
// in dollars an hour.
type Plan struct {
	ID, Type, Family, Region, Commitment string
	// State is "active" when empty.
	State string
	Rates map[string]string
}

// Server is a Savings Plans endpoint; its zero value is not usable: call
// New. It implements http.Handler.
type Server struct {
	// PageSize bounds the rates a page of DescribeSavingsPlanRates
	// returns (100 when zero).
	PageSize int

	mu    sync.Mutex
	plans []Plan
	calls map[string]int
}

// New returns a server with no plans.
func New() *Server { return &Server{calls: map[string]int{}} }

// AddPlan adds a Savings Plan.
func (s *Server) AddPlan(p Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.State == "" {
		p.State = "active"
	}
	s.plans = append(s.plans, p)
}

// Calls returns how many requests of an operation were served.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "ValidationException", "use POST")
		return
	}
	var in map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "ValidationException", "bad JSON: "+err.Error())
		return
	}
	switch r.URL.Path {
	case "/DescribeSavingsPlans":
		s.calls["DescribeSavingsPlans"]++
		s.describePlans(w, in)
	case "/DescribeSavingsPlanRates":
		s.calls["DescribeSavingsPlanRates"]++
		s.describeRates(w, in)
	default:
		writeError(w, http.StatusNotFound, "UnknownOperationException", "no operation at "+r.URL.Path)
	}
}

func stringList(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (s *Server) describePlans(w http.ResponseWriter, in map[string]any) {
	states, ids := stringList(in["states"]), stringList(in["savingsPlanIds"])
	var out []map[string]any
	for _, p := range s.plans {
		if len(states) > 0 && !slices.Contains(states, p.State) || len(ids) > 0 && !slices.Contains(ids, p.ID) {
			continue
		}
		m := map[string]any{"savingsPlanId": p.ID, "savingsPlanArn": "arn:aws:savingsplans::000000000000:savingsplan/" + p.ID,
			"savingsPlanType": p.Type, "commitment": p.Commitment, "state": p.State, "currency": "USD",
			"paymentOption": "No Upfront", "productTypes": []string{"EC2"}, "termDurationInSeconds": 31536000}
		if p.Family != "" {
			m["ec2InstanceFamily"] = p.Family
		}
		if p.Region != "" {
			m["region"] = p.Region
		}
		out = append(out, m)
	}
	writeJSON(w, map[string]any{"savingsPlans": out})
}

func (s *Server) describeRates(w http.ResponseWriter, in map[string]any) {
	id, _ := in["savingsPlanId"].(string)
	i := slices.IndexFunc(s.plans, func(p Plan) bool { return p.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("Savings Plan %s not found", id))
		return
	}
	p := s.plans[i]
	types := make([]string, 0, len(p.Rates))
	for t := range p.Rates {
		types = append(types, t)
	}
	slices.Sort(types)
	start := 0
	if tok, _ := in["nextToken"].(string); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(types) {
			writeError(w, http.StatusBadRequest, "ValidationException", "bad nextToken")
			return
		}
		start = n
	}
	size := s.PageSize
	if size <= 0 {
		size = 100
	}
	end := min(start+size, len(types))
	results := []map[string]any{}
	for _, t := range types[start:end] {
		results = append(results, map[string]any{"rate": p.Rates[t], "currency": "USD", "unit": "Hrs", "productType": "EC2",
			"serviceCode": "AmazonEC2", "usageType": "BoxUsage:" + t, "operation": "RunInstances",
			"properties": []map[string]string{{"name": "instanceType", "value": t}, {"name": "productDescription", "value": "Linux/UNIX"}, {"name": "tenancy", "value": "shared"}}})
	}
	out := map[string]any{"savingsPlanId": id, "searchResults": results}
	if end < len(types) {
		out["nextToken"] = strconv.Itoa(end)
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}
