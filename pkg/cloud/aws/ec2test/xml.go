package ec2test

import (
	"encoding/xml"
	"maps"
	"slices"
	"time"
)

// The response shapes below carry the element names the SDK's EC2 Query
// deserializers read (service/ec2/deserializers.go): lists are <item>
// members of a *Set element, timestamps ISO 8601 in UTC.

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// meta is embedded in every response.
type meta struct {
	RequestID string `xml:"requestId"`
}

type items[T any] struct {
	Items []T `xml:"item"`
}

func itemsOf[T any](xs []T) *items[T] {
	if len(xs) == 0 {
		return nil
	}
	return &items[T]{Items: xs}
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagsXML(tags map[string]string) *items[tagXML] {
	var out []tagXML
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, tagXML{Key: k, Value: tags[k]})
	}
	return itemsOf(out)
}

func timeXML(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type errorResponse struct {
	XMLName xml.Name `xml:"Response"`
	Errors  []struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Errors>Error"`
	RequestID string `xml:"RequestID"`
}

type describeInstanceTypesXML struct {
	meta
	InstanceTypes *items[instanceTypeXML] `xml:"instanceTypeSet"`
	NextToken     string                  `xml:"nextToken,omitempty"`
}

type instanceTypeXML struct {
	InstanceType      string `xml:"instanceType"`
	CurrentGeneration bool   `xml:"currentGeneration"`
	VCPU              struct {
		DefaultVCpus int `xml:"defaultVCpus"`
	} `xml:"vCpuInfo"`
	Memory struct {
		SizeInMiB int64 `xml:"sizeInMiB"`
	} `xml:"memoryInfo"`
	Processor struct {
		Architectures *items[string] `xml:"supportedArchitectures"`
	} `xml:"processorInfo"`
	GPU     *gpuInfoXML `xml:"gpuInfo,omitempty"`
	Network struct {
		MaxENIs    int `xml:"maximumNetworkInterfaces"`
		IPv4PerENI int `xml:"ipv4AddressesPerInterface"`
	} `xml:"networkInfo"`
	UsageClasses *items[string] `xml:"supportedUsageClasses"`
}

type gpuInfoXML struct {
	GPUs *items[gpuXML] `xml:"gpus"`
}

type gpuXML struct {
	Count        int    `xml:"count"`
	Name         string `xml:"name"`
	Manufacturer string `xml:"manufacturer"`
}

type describeInstanceTypeOfferingsXML struct {
	meta
	Offerings *items[offeringXML] `xml:"instanceTypeOfferingSet"`
	NextToken string              `xml:"nextToken,omitempty"`
}

type offeringXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeSpotPriceHistoryXML struct {
	meta
	Prices    *items[spotPriceXML] `xml:"spotPriceHistorySet"`
	NextToken string               `xml:"nextToken,omitempty"`
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

type describeSubnetsXML struct {
	meta
	Subnets   *items[subnetXML] `xml:"subnetSet"`
	NextToken string            `xml:"nextToken,omitempty"`
}

type subnetXML struct {
	SubnetID         string         `xml:"subnetId"`
	State            string         `xml:"state"`
	VpcID            string         `xml:"vpcId"`
	CidrBlock        string         `xml:"cidrBlock"`
	AvailableIPs     int            `xml:"availableIpAddressCount"`
	AvailabilityZone string         `xml:"availabilityZone"`
	ZoneID           string         `xml:"availabilityZoneId"`
	Tags             *items[tagXML] `xml:"tagSet"`
}

type describeSecurityGroupsXML struct {
	meta
	Groups    *items[securityGroupXML] `xml:"securityGroupInfo"`
	NextToken string                   `xml:"nextToken,omitempty"`
}

type securityGroupXML struct {
	GroupID     string         `xml:"groupId"`
	GroupName   string         `xml:"groupName"`
	Description string         `xml:"groupDescription"`
	VpcID       string         `xml:"vpcId"`
	Tags        *items[tagXML] `xml:"tagSet"`
}

type describeImagesXML struct {
	meta
	Images    *items[imageXML] `xml:"imagesSet"`
	NextToken string           `xml:"nextToken,omitempty"`
}

type imageXML struct {
	ImageID      string         `xml:"imageId"`
	Name         string         `xml:"name"`
	State        string         `xml:"imageState"`
	OwnerID      string         `xml:"imageOwnerId"`
	Architecture string         `xml:"architecture"`
	CreationDate string         `xml:"creationDate"`
	Tags         *items[tagXML] `xml:"tagSet"`
}

type launchTemplateXML struct {
	ID             string         `xml:"launchTemplateId"`
	Name           string         `xml:"launchTemplateName"`
	CreateTime     string         `xml:"createTime"`
	DefaultVersion int            `xml:"defaultVersionNumber"`
	LatestVersion  int            `xml:"latestVersionNumber"`
	Tags           *items[tagXML] `xml:"tagSet"`
}

type createLaunchTemplateXML struct {
	meta
	LaunchTemplate launchTemplateXML `xml:"launchTemplate"`
}

type describeLaunchTemplatesXML struct {
	meta
	LaunchTemplates *items[launchTemplateXML] `xml:"launchTemplates"`
	NextToken       string                    `xml:"nextToken,omitempty"`
}

type createFleetXML struct {
	meta
	FleetID   string                   `xml:"fleetId"`
	Errors    *items[fleetErrorXML]    `xml:"errorSet"`
	Instances *items[fleetInstanceXML] `xml:"fleetInstanceSet"`
}

type fleetOverridesXML struct {
	Spec struct {
		LaunchTemplateID string `xml:"launchTemplateId,omitempty"`
		Version          string `xml:"version,omitempty"`
	} `xml:"launchTemplateSpecification"`
	Overrides struct {
		InstanceType     string `xml:"instanceType,omitempty"`
		SubnetID         string `xml:"subnetId,omitempty"`
		AvailabilityZone string `xml:"availabilityZone,omitempty"`
		ImageID          string `xml:"imageId,omitempty"`
	} `xml:"overrides"`
}

type fleetErrorXML struct {
	LaunchTemplateAndOverrides fleetOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	ErrorCode                  string            `xml:"errorCode"`
	ErrorMessage               string            `xml:"errorMessage"`
}

type fleetInstanceXML struct {
	LaunchTemplateAndOverrides fleetOverridesXML `xml:"launchTemplateAndOverrides"`
	Lifecycle                  string            `xml:"lifecycle"`
	InstanceIDs                *items[string]    `xml:"instanceIds"`
	InstanceType               string            `xml:"instanceType"`
}

type describeInstancesXML struct {
	meta
	Reservations *items[reservationXML] `xml:"reservationSet"`
	NextToken    string                 `xml:"nextToken,omitempty"`
}

type reservationXML struct {
	ReservationID string              `xml:"reservationId"`
	OwnerID       string              `xml:"ownerId"`
	Instances     *items[instanceXML] `xml:"instancesSet"`
}

type stateXML struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type instanceXML struct {
	InstanceID     string   `xml:"instanceId"`
	ImageID        string   `xml:"imageId"`
	State          stateXML `xml:"instanceState"`
	PrivateDNSName string   `xml:"privateDnsName"`
	InstanceType   string   `xml:"instanceType"`
	LaunchTime     string   `xml:"launchTime"`
	Placement      struct {
		AvailabilityZone string `xml:"availabilityZone"`
	} `xml:"placement"`
	SubnetID                string                      `xml:"subnetId"`
	VpcID                   string                      `xml:"vpcId"`
	PrivateIPAddress        string                      `xml:"privateIpAddress"`
	Architecture            string                      `xml:"architecture"`
	InstanceLifecycle       string                      `xml:"instanceLifecycle,omitempty"`
	SpotRequestID           string                      `xml:"spotInstanceRequestId,omitempty"`
	ClientToken             string                      `xml:"clientToken,omitempty"`
	Groups                  *items[groupXML]            `xml:"groupSet,omitempty"`
	Tags                    *items[tagXML]              `xml:"tagSet"`
	CapacityReservationID   string                      `xml:"capacityReservationId,omitempty"`
	CapacityReservationSpec *capacityReservationSpecXML `xml:"capacityReservationSpecification,omitempty"`
}

// capacityReservationSpecXML is an instance's capacity reservation
// preference and target.
type capacityReservationSpecXML struct {
	Preference string `xml:"capacityReservationPreference,omitempty"`
	Target     struct {
		ID string `xml:"capacityReservationId"`
	} `xml:"capacityReservationTarget"`
}

// groupXML is one of an instance's security groups.
type groupXML struct {
	ID   string `xml:"groupId"`
	Name string `xml:"groupName,omitempty"`
}

type terminateInstancesXML struct {
	meta
	Instances *items[stateChangeXML] `xml:"instancesSet"`
}

type stateChangeXML struct {
	InstanceID string   `xml:"instanceId"`
	Current    stateXML `xml:"currentState"`
	Previous   stateXML `xml:"previousState"`
}
