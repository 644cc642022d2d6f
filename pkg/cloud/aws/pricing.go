package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// RefreshOnDemandPrices reads Linux, shared-tenancy, on-demand prices of the
// region from the Pricing API (GetProducts). Types the API does not price
// keep their previous price (the embedded snapshot's at first); on failure
// every price stays.
func (p *Provider) RefreshOnDemandPrices(ctx context.Context) error {
	prices, err := p.getOnDemandPrices(ctx)
	if err == nil && len(prices) == 0 {
		err = fmt.Errorf("the Pricing API returned no prices for %s", p.region)
	}
	if err != nil {
		p.metrics.refreshFailures.WithLabelValues("on_demand").Inc()
		p.log.Error(err, "refreshing on-demand prices failed; keeping the last good prices")
		return fmt.Errorf("refreshing on-demand prices: %w", err)
	}
	now := p.opts.Now()
	p.mu.Lock()
	od := make(map[string]float64, len(p.odPrices)+len(prices))
	for k, v := range p.odPrices {
		od[k] = v
	}
	for k, v := range prices {
		od[k] = v
	}
	p.odPrices, p.odAt = od, now
	p.mu.Unlock()
	p.metrics.lastRefresh.WithLabelValues("on_demand").Set(float64(now.Unix()))
	p.log.V(1).Info("refreshed on-demand prices", "types", len(prices))
	return nil
}

func (p *Provider) getOnDemandPrices(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	in := &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		FormatVersion: aws.String("aws_v1"),
		Filters: []pricingtypes.Filter{
			term("regionCode", p.region),
			term("operatingSystem", "Linux"),
			term("tenancy", "Shared"),
			term("preInstalledSw", "NA"),
			term("capacitystatus", "Used"),
			term("licenseModel", "No License required"),
		},
	}
	prices := map[string]float64{}
	pages := pricing.NewGetProductsPaginator(p.pricing, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("GetProducts: %w", err)
		}
		for _, doc := range out.PriceList {
			typ, price, err := parsePriceListItem(doc)
			if err != nil {
				return nil, err
			}
			if typ != "" && price > 0 {
				prices[typ] = price
			}
		}
	}
	return prices, nil
}

// priceListItem is the part of a Pricing API product document read here.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceListItem returns the instance type and hourly USD price of one
// GetProducts document; an empty type for documents that are not an
// instance's hourly price.
func parsePriceListItem(doc string) (string, float64, error) {
	var item priceListItem
	if err := json.Unmarshal([]byte(doc), &item); err != nil {
		return "", 0, fmt.Errorf("GetProducts: malformed price document: %w", err)
	}
	typ := item.Product.Attributes.InstanceType
	for _, term := range item.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if dim.Unit != "Hrs" {
				continue
			}
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(usd, 64)
			if err != nil || v < 0 {
				return "", 0, fmt.Errorf("GetProducts: %s: bad price %q", typ, usd)
			}
			if v > 0 {
				return typ, v, nil
			}
		}
	}
	return "", 0, nil
}

// RefreshSpotPrices reads the latest spot price of every type and zone
// from DescribeSpotPriceHistory. Pools without history keep their
// previous price; on failure every price stays.
func (p *Provider) RefreshSpotPrices(ctx context.Context) error {
	prices, err := p.describeSpotPrices(ctx)
	if err != nil {
		p.metrics.refreshFailures.WithLabelValues("spot").Inc()
		p.log.Error(err, "refreshing spot prices failed; keeping the last good prices")
		return fmt.Errorf("refreshing spot prices: %w", err)
	}
	now := p.opts.Now()
	p.mu.Lock()
	spot := make(map[string]map[string]float64, len(p.spotPrices))
	for typ, zones := range p.spotPrices {
		spot[typ] = make(map[string]float64, len(zones))
		for z, v := range zones {
			spot[typ][z] = v
		}
	}
	for typ, zones := range prices {
		if spot[typ] == nil {
			spot[typ] = map[string]float64{}
		}
		for z, v := range zones {
			spot[typ][z] = v.price
		}
	}
	p.spotPrices, p.spotAt = spot, now
	p.mu.Unlock()
	p.metrics.lastRefresh.WithLabelValues("spot").Set(float64(now.Unix()))
	p.log.V(1).Info("refreshed spot prices", "types", len(prices))
	return nil
}

type spotQuote struct {
	price float64
	at    time.Time
}

func (p *Provider) describeSpotPrices(ctx context.Context) (map[string]map[string]spotQuote, error) {
	ctx, cancel := p.call(ctx)
	defer cancel()
	// A start time of now returns the price in effect now for every pool.
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(p.opts.Now()),
		MaxResults:          aws.Int32(1000),
	}
	out := map[string]map[string]spotQuote{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			v, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || v <= 0 {
				continue
			}
			typ, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			at := aws.ToTime(sp.Timestamp)
			if out[typ] == nil {
				out[typ] = map[string]spotQuote{}
			}
			if q, ok := out[typ][zone]; !ok || at.After(q.at) {
				out[typ][zone] = spotQuote{price: v, at: at}
			}
		}
	}
	return out, nil
}
