package ec2test

import (
	"net/url"
	"strconv"
	"strings"
)

// maxListItems bounds how many numbered members a list may have, so that a
// hostile request cannot make the server loop for long.
const maxListItems = 1000

// params is a decoded EC2 Query request: the form values, with helpers for
// the protocol's flattened lists (Name.1, Name.2, …) and structures
// (Name.Member).
type params struct {
	values url.Values
	prefix string // "" or "Name.1." — prepended to every key looked up
}

func newParams(v url.Values) params { return params{values: v} }

// get returns the value of key, or "".
func (p params) get(key string) string { return p.values.Get(p.prefix + key) }

// has reports whether key or any member of it (key.…) is present.
func (p params) has(key string) bool {
	full := p.prefix + key
	if _, ok := p.values[full]; ok {
		return true
	}
	for k := range p.values {
		if strings.HasPrefix(k, full+".") {
			return true
		}
	}
	return false
}

// bool returns whether key is "true".
func (p params) bool(key string) bool { return strings.EqualFold(p.get(key), "true") }

// int returns key as an integer, or def when absent or malformed.
func (p params) int(key string, def int) int {
	v, err := strconv.Atoi(p.get(key))
	if err != nil {
		return def
	}
	return v
}

// sub returns the structure under key: sub("A").get("B") reads "A.B".
func (p params) sub(key string) params {
	return params{values: p.values, prefix: p.prefix + key + "."}
}

// list returns the scalar members key.1, key.2, … up to the first gap.
func (p params) list(key string) []string {
	var out []string
	for i := 1; i <= maxListItems; i++ {
		k := p.prefix + key + "." + strconv.Itoa(i)
		v, ok := p.values[k]
		if !ok || len(v) == 0 {
			break
		}
		out = append(out, v[0])
	}
	return out
}

// structs returns the structure members key.1, key.2, … up to the first gap.
func (p params) structs(key string) []params {
	var out []params
	for i := 1; i <= maxListItems; i++ {
		s := p.sub(key + "." + strconv.Itoa(i))
		if !s.hasAny() {
			break
		}
		out = append(out, s)
	}
	return out
}

// hasAny reports whether any key lies under p's prefix.
func (p params) hasAny() bool {
	for k := range p.values {
		if strings.HasPrefix(k, p.prefix) {
			return true
		}
	}
	return false
}

// filter is one EC2 Filter: Name and the values any of which may match.
type filter struct {
	Name   string
	Values []string
}

// filters returns Filter.N.Name / Filter.N.Value.M.
func (p params) filters() []filter {
	var out []filter
	for _, f := range p.structs("Filter") {
		out = append(out, filter{Name: f.get("Name"), Values: f.list("Value")})
	}
	return out
}

// tags returns key.N.Key / key.N.Value as a map.
func (p params) tags(key string) map[string]string {
	var out map[string]string
	for _, t := range p.structs(key) {
		if out == nil {
			out = map[string]string{}
		}
		out[t.get("Key")] = t.get("Value")
	}
	return out
}

// tagSpecs returns TagSpecification.N: resource type → tags.
func (p params) tagSpecs(key string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, s := range p.structs(key) {
		rt := s.get("ResourceType")
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range s.tags("Tag") {
			out[rt][k] = v
		}
	}
	return out
}

// wildcardMatch reports whether s matches pattern, where * matches any run
// of characters and ? any one character, as EC2 filter values do.
func wildcardMatch(pattern, s string) bool {
	// Iterative matcher with backtracking to the last *; linear in practice.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchFilters reports whether an object passes every filter; field returns
// the object's values for a filter name and whether the name is supported.
func matchFilters(filters []filter, field func(name string) ([]string, bool)) (bool, error) {
	for _, f := range filters {
		have, ok := field(f.Name)
		if !ok {
			return false, &apiError{status: 400, code: "InvalidParameterValue", message: "The filter '" + f.Name + "' is invalid"}
		}
		if !anyMatch(f.Values, have) {
			return false, nil
		}
	}
	return true, nil
}

// fields are an object's values for the filter names it answers.
type fields map[string][]string

// matchFields is matchFilters for an object answering the filters fs
// names, and no others.
func matchFields(filters []filter, fs fields) (bool, error) {
	return matchFilters(filters, func(name string) ([]string, bool) {
		v, ok := fs[name]
		return v, ok
	})
}

// matchTagged is matchFields for a tagged object: the tag filters
// (tagField) read its tags.
func matchTagged(filters []filter, fs fields, tags map[string]string) (bool, error) {
	return matchFilters(filters, func(name string) ([]string, bool) {
		if v, ok := fs[name]; ok {
			return v, true
		}
		return tagField(name, tags)
	})
}

func anyMatch(patterns, values []string) bool {
	for _, pat := range patterns {
		for _, v := range values {
			if wildcardMatch(pat, v) {
				return true
			}
		}
	}
	return false
}

// tagField answers the tag filters (tag:K, tag-key, tag-value) for tags.
func tagField(name string, tags map[string]string) ([]string, bool) {
	switch {
	case strings.HasPrefix(name, "tag:"):
		if v, ok := tags[strings.TrimPrefix(name, "tag:")]; ok {
			return []string{v}, true
		}
		return nil, true
	case name == "tag-key":
		keys := make([]string, 0, len(tags))
		for k := range tags {
			keys = append(keys, k)
		}
		return keys, true
	case name == "tag-value":
		vals := make([]string, 0, len(tags))
		for _, v := range tags {
			vals = append(vals, v)
		}
		return vals, true
	}
	return nil, false
}
