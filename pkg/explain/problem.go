// Package explain answers "what nodes would these workloads need, and what
// would they cost?": it builds the solver's problem from manifests and a
// catalog (through pkg/plan, as every front end does), asks the solver,
// and prints the plan for people or machines.
package explain

import (
	"github.com/rightsize-dev/kubectl-rightsize/pkg/plan"
)

// Catalog says where instance types and prices come from (plan.Catalog).
type Catalog = plan.Catalog

// DefaultPool describes the pool used when the input defines none
// (plan.DefaultPool).
type DefaultPool = plan.DefaultPool
