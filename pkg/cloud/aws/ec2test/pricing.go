package ec2test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpotPrice is one entry of the spot price history.
type SpotPrice struct {
	InstanceType, Zone string
	Price              float64
	Time               time.Time
}

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
		ok, err := matchFields(p.filters(), fields{
			"instance-type": {sp.InstanceType}, "availability-zone": {sp.Zone}, "product-description": {linuxProduct},
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
	for _, name := range slices.Sorted(maps.Keys(s.types)) {
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
