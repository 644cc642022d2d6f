// Package explain answers "what nodes would these workloads need, and what
// would they cost?": it builds the solver's problem from manifests and a
// catalog (through pkg/plan, as every front end does), asks the solver,
// and prints the plan for people or machines.
package explain
