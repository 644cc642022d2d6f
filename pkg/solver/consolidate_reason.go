package solver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// formatAge renders a duration as a person says it: "45s", "2m", "1h30m".
func formatAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(max(d, 0)/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	s := strconv.Itoa(int(d/time.Hour)) + "h"
	if m := int(d % time.Hour / time.Minute); m > 0 {
		s += strconv.Itoa(m) + "m"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func formatDollars(x float64) string {
	return "$" + strconv.FormatFloat(math.Round(x*10000)/10000, 'f', -1, 64) + "/h"
}

func names(set []*consNode) string {
	out := make([]string, len(set))
	for i, n := range set {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
}

// actionReason says why an action is safe and worth it, in one sentence.
func (c *consolidator) actionReason(a *Action, set []*consNode, targets []string, removed float64) string {
	var where []string
	if len(targets) > 0 {
		where = append(where, "on "+listNames(targets, 3))
	}
	if len(a.Replacements) > 0 {
		types := map[string]int{}
		var order []string
		for _, r := range a.Replacements {
			key := r.InstanceType + " " + r.CapacityType
			if types[key] == 0 {
				order = append(order, key)
			}
			types[key]++
		}
		var parts []string
		for _, k := range order {
			if types[k] == 1 {
				parts = append(parts, "a new "+k)
			} else {
				parts = append(parts, strconv.Itoa(types[k])+" new "+k)
			}
		}
		where = append(where, "on "+andList(parts)+" ("+formatDollars(removed-a.Saving)+")")
	}
	subject := "its"
	if len(set) > 1 {
		subject = "their"
	}
	if len(a.Replacements) == 0 {
		verb := "deleting it"
		if len(set) > 1 {
			verb = "deleting them"
		}
		return fmt.Sprintf("%s %s fit %s within every PDB and budget; %s saves %s",
			subject, plural(len(a.Moves), "pod"), strings.Join(where, " and "), verb, formatDollars(a.Saving))
	}
	return fmt.Sprintf("%s %s fit %s within every PDB and budget, saving %s of %s (%.0f%%)",
		subject, plural(len(a.Moves), "pod"), strings.Join(where, " and "), formatDollars(a.Saving), formatDollars(removed), 100*a.Saving/removed)
}

// andList joins "a", "b" and "c" as "a, b and c".
func andList(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func listNames(names []string, n int) string {
	if len(names) <= n {
		return andList(names)
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d other nodes", len(names)-n)
}
