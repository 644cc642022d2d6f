package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// crdDir holds the CRDs controller-gen writes from pkg/apis/v1alpha1.
const crdDir = "config/crd"

// crd is the part of an apiextensions.k8s.io/v1 CustomResourceDefinition
// the reference shows.
type crd struct {
	Kind string `json:"kind"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind       string   `json:"kind"`
			Plural     string   `json:"plural"`
			ShortNames []string `json:"shortNames"`
			Categories []string `json:"categories"`
		} `json:"names"`
		Scope    string `json:"scope"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
			} `json:"schema"`
			Subresources map[string]json.RawMessage `json:"subresources"`
		} `json:"versions"`
	} `json:"spec"`
}

// schema is an OpenAPI v3 schema as CRDs carry it (JSONSchemaProps).
type schema struct {
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties *additional        `json:"additionalProperties"`
	Required             []string           `json:"required"`
	Enum                 []json.RawMessage  `json:"enum"`
	Default              json.RawMessage    `json:"default"`
	Pattern              string             `json:"pattern"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	MinLength            *int64             `json:"minLength"`
	MaxLength            *int64             `json:"maxLength"`
	MinItems             *int64             `json:"minItems"`
	MaxItems             *int64             `json:"maxItems"`
	MinProperties        *int64             `json:"minProperties"`
	MaxProperties        *int64             `json:"maxProperties"`
	IntOrString          bool               `json:"x-kubernetes-int-or-string"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
	ListType             string             `json:"x-kubernetes-list-type"`
	Validations          []struct {
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"x-kubernetes-validations"`
}

// additional is additionalProperties: a schema, or a bare boolean.
type additional struct {
	*schema
	Allowed bool
}

// UnmarshalJSON reads either form of additionalProperties.
func (a *additional) UnmarshalJSON(b []byte) error {
	if string(b) == "true" || string(b) == "false" {
		a.Allowed = string(b) == "true"
		return nil
	}
	a.Allowed = true
	a.schema = &schema{}
	return json.Unmarshal(b, a.schema)
}

// crdPages renders docs/reference/crds.md from every CRD in config/crd.
func crdPages(root string) (map[string][]byte, error) {
	files, err := filepath.Glob(filepath.Join(root, crdDir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", crdDir, err)
	}
	var crds []crd
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			var c crd
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, fmt.Errorf("%s, document %d: %w", filepath.Base(f), i+1, err)
			}
			if c.Kind != "CustomResourceDefinition" {
				continue
			}
			crds = append(crds, c)
		}
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CustomResourceDefinition in %s", crdDir)
	}
	slices.SortFunc(crds, func(a, b crd) int { return strings.Compare(a.Spec.Names.Kind, b.Spec.Names.Kind) })

	var b strings.Builder
	fmt.Fprintf(&b, generatedHeader, "the CRDs in config/crd, which controller-gen writes from pkg/apis/v1alpha1")
	b.WriteString("# CRD reference\n\n")
	b.WriteString("The custom resources of the `rightsize.dev` API group. Field names follow Karpenter v1, so\n")
	b.WriteString("that a Karpenter user reads them without a manual; `kubectl rightsize import` converts\n")
	b.WriteString("Karpenter's manifests into them. `kubectl explain` shows the same descriptions on a cluster\n")
	b.WriteString("with the CRDs installed.\n\n")
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			fmt.Fprintf(&b, "- [%s](#%s) (`%s/%s`)\n", c.Spec.Names.Kind, strings.ToLower(c.Spec.Names.Kind), c.Spec.Group, v.Name)
		}
	}
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			s := v.Schema.OpenAPIV3Schema
			if s == nil {
				return nil, fmt.Errorf("%s %s has no openAPIV3Schema", c.Spec.Names.Kind, v.Name)
			}
			fmt.Fprintf(&b, "\n## %s\n\n", c.Spec.Names.Kind)
			fmt.Fprintf(&b, "`apiVersion: %s/%s`, `kind: %s`; %s-scoped", c.Spec.Group, v.Name, c.Spec.Names.Kind, strings.ToLower(c.Spec.Scope))
			fmt.Fprintf(&b, "; plural `%s`", c.Spec.Names.Plural)
			if len(c.Spec.Names.ShortNames) > 0 {
				fmt.Fprintf(&b, ", short names `%s`", strings.Join(c.Spec.Names.ShortNames, "`, `"))
			}
			if len(c.Spec.Names.Categories) > 0 {
				fmt.Fprintf(&b, ", categories `%s`", strings.Join(c.Spec.Names.Categories, "`, `"))
			}
			if _, ok := v.Subresources["status"]; ok {
				b.WriteString("; status subresource")
			}
			b.WriteString(".\n\n")
			b.WriteString(paragraphs(s.Description))
			b.WriteString("\n\n| field | type | description |\n|---|---|---|\n")
			for _, name := range sortedProps(s) {
				if name == "apiVersion" || name == "kind" || name == "metadata" {
					continue
				}
				writeFields(&b, name, s.Properties[name], slices.Contains(s.Required, name))
			}
		}
	}
	return map[string][]byte{referenceDir + "/crds.md": []byte(b.String())}, nil
}

// sortedProps orders an object's properties: spec before status, then by
// name.
func sortedProps(s *schema) []string {
	names := sortedKeys(s.Properties)
	slices.SortStableFunc(names, func(a, b string) int {
		rank := func(n string) int {
			switch n {
			case "spec":
				return 0
			case "status":
				return 2
			}
			return 1
		}
		return rank(a) - rank(b)
	})
	return names
}

// writeFields writes the row of one field and the rows of the fields
// under it, depth first.
func writeFields(b *strings.Builder, path string, s *schema, required bool) {
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typeName(s), cell(fieldDescription(s, required)))
	switch {
	case s.Type == "array" && s.Items != nil:
		if s.Items.Type == "object" {
			for _, name := range sortedKeys(s.Items.Properties) {
				writeFields(b, path+"[]."+name, s.Items.Properties[name], slices.Contains(s.Items.Required, name))
			}
		}
	case len(s.Properties) > 0:
		for _, name := range sortedKeys(s.Properties) {
			writeFields(b, path+"."+name, s.Properties[name], slices.Contains(s.Required, name))
		}
	case s.AdditionalProperties != nil && s.AdditionalProperties.schema != nil && len(s.AdditionalProperties.Properties) > 0:
		v := s.AdditionalProperties.schema
		for _, name := range sortedKeys(v.Properties) {
			writeFields(b, path+".<key>."+name, v.Properties[name], slices.Contains(v.Required, name))
		}
	}
}

// typeName is a field's type as a reader of Go types expects it.
func typeName(s *schema) string {
	switch {
	case s.IntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil:
		return "[]" + typeName(s.Items)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.schema != nil && len(s.Properties) == 0:
		return "map[string]" + typeName(s.AdditionalProperties.schema)
	case s.Type == "":
		if s.PreserveUnknown {
			return "any"
		}
		return "object"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	}
	return s.Type
}

// fieldDescription is a field's description followed by what the schema
// enforces: required, default, allowed values, bounds and validation rules.
func fieldDescription(s *schema, required bool) string {
	var notes []string
	if required {
		notes = append(notes, "Required.")
	}
	if len(s.Default) > 0 {
		notes = append(notes, "Default: `"+compactJSON(s.Default)+"`.")
	}
	if len(s.Enum) > 0 {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = "`" + compactJSON(e) + "`"
		}
		notes = append(notes, "One of "+strings.Join(vals, ", ")+".")
	}
	bound := func(what string, min, max *float64) {
		switch {
		case min != nil && max != nil:
			notes = append(notes, fmt.Sprintf("%s %s to %s.", what, num(*min), num(*max)))
		case min != nil:
			notes = append(notes, fmt.Sprintf("%s at least %s.", what, num(*min)))
		case max != nil:
			notes = append(notes, fmt.Sprintf("%s at most %s.", what, num(*max)))
		}
	}
	bound("Value", s.Minimum, s.Maximum)
	bound("Length", toFloat(s.MinLength), toFloat(s.MaxLength))
	bound("Items", toFloat(s.MinItems), toFloat(s.MaxItems))
	bound("Entries", toFloat(s.MinProperties), toFloat(s.MaxProperties))
	if s.Pattern != "" {
		notes = append(notes, "Pattern: `"+s.Pattern+"`.")
	}
	if s.ListType != "" && s.ListType != "atomic" {
		notes = append(notes, "List type: "+s.ListType+".")
	}
	for _, v := range s.Validations {
		if v.Message != "" {
			notes = append(notes, "Validation: "+strings.TrimSuffix(v.Message, ".")+".")
		} else {
			notes = append(notes, "Validation: `"+strings.Join(strings.Fields(v.Rule), " ")+"`.")
		}
	}
	text := strings.TrimSpace(s.Description)
	if len(notes) > 0 {
		if text != "" {
			text += "\n\n"
		}
		text += strings.Join(notes, " ")
	}
	return text
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func toFloat(i *int64) *float64 {
	if i == nil {
		return nil
	}
	f := float64(*i)
	return &f
}

// paragraphs reflows a description into markdown paragraphs.
func paragraphs(text string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		out = append(out, escapeOutsideCode(strings.Join(strings.Fields(p), " ")))
	}
	return strings.ReplaceAll(strings.Join(out, "\n\n"), `\|`, "|")
}
