package ec2test

import (
	"encoding/json"
	"slices"
	"time"
)

// Image is a machine image.
type Image struct {
	ID, Name, Owner string
	Arch            string // x86_64 or arm64
	Created         time.Time
	Tags            map[string]string
}

// AddImage adds an image.
func (s *Server) AddImage(im Image) { s.mu.Lock(); s.images = append(s.images, im); s.mu.Unlock() }

// SetParameter sets an SSM parameter.
func (s *Server) SetParameter(name, value string) { s.mu.Lock(); s.params[name] = value; s.mu.Unlock() }

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
		ok, err := matchTagged(p.filters(), fields{
			"image-id": {im.ID}, "name": {im.Name}, "owner-id": {im.Owner}, "owner-alias": {im.Owner}, "architecture": {im.Arch},
			"state": {"available"},
		}, im.Tags)
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
