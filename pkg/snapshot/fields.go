package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rightsize-dev/kubectl-rightsize/pkg/strictjson"
)

// decodeFields decodes j into v. Unknown, duplicate and miscased fields are
// errors when m.Strict is set (--strict); otherwise, as kubectl's warn field
// validation, each is one warning naming the document, the object and the
// field's path, and decoding goes on without it. A field that looks like a
// misspelt scheduling field says what the plan now lacks. generic is j
// decoded into an any, used to say where a bad quantity is.
func (m *Manifests) decodeFields(j []byte, v any, generic any) error {
	fields, err := strictjson.DecodeFields(j, v)
	return m.fieldsDecoded(fields, err, generic)
}

// fieldsDecoded is decodeFields once strictjson.DecodeFields has returned
// fields and err.
func (m *Manifests) fieldsDecoded(fields []error, err error, generic any) error {
	if m.Strict {
		// strictjson.Decode's error, as decodeStrict explains it.
		if err == nil {
			err = errors.Join(fields...)
		}
		return explainValueError(err, generic)
	}
	if err != nil {
		return explainValueError(err, generic)
	}
	for _, f := range fields {
		msg := f.Error() + " ignored (--strict rejects it)"
		if hint := misspelt(f.Error()); hint != "" {
			msg += "; " + hint
		}
		m.warnf(m.object, "%s", msg)
	}
	return nil
}

// schedulingFields are the fields whose absence changes a plan, with what
// the plan looks like without them.
var schedulingFields = map[string]string{
	"requests":                  "without it the container requests no CPU or memory (its limits, if any, stand in)",
	"limits":                    "without it the container has no limits",
	"resources":                 "without it the container requests no CPU or memory",
	"replicas":                  "without it 1 replica is planned",
	"parallelism":               "without it 1 pod is planned",
	"nodeSelector":              "without it the pod may run on any node",
	"affinity":                  "without it the pod has no affinity",
	"nodeAffinity":              "without it the pod has no node affinity",
	"podAffinity":               "without it the pod has no pod affinity",
	"podAntiAffinity":           "without it the pod has no pod anti-affinity",
	"tolerations":               "without it the pod tolerates no taint",
	"topologySpreadConstraints": "without it the pod is not spread",
	"overhead":                  "without it the pod has no overhead",
	"requirements":              "without it the pool allows every instance type",
	"taints":                    "without it the pool's nodes have no taints",
}

// misspelt returns a hint when the field a strict-field error names is one
// or two edits (or only case) away from a scheduling field, else "".
func misspelt(msg string) string {
	_, rest, ok := strings.Cut(msg, `unknown field "`)
	if !ok {
		return ""
	}
	path, _, _ := strings.Cut(rest, `"`)
	field := path[strings.LastIndexByte(path, '.')+1:]
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	if len(field) <= 3 {
		return ""
	}
	best, bestDist := "", 3
	for _, known := range slices.Sorted(maps.Keys(schedulingFields)) {
		if d := EditDistance(strings.ToLower(field), strings.ToLower(known)); d < bestDist && field != known {
			best, bestDist = known, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("did you mean %s? %s", best, schedulingFields[best])
}

// EditDistance is the Levenshtein distance between a and b, which the
// front ends use to suggest the name a user probably meant.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
