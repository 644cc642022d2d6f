module github.com/rightsize-dev/kubectl-rightsize/hack/gencatalog

go 1.26

require github.com/LeanerCloud/ec2-instances-info v0.0.0-20250528091325-32acf84f42eb

require github.com/pkg/errors v0.9.1 // indirect

// The repository was renamed to cristim/ec2-instances-info, but its go.mod still
// declares the old path, so it can only be required under the old path and
// fetched from the new one.
replace github.com/LeanerCloud/ec2-instances-info => github.com/cristim/ec2-instances-info v0.0.0-20250528091325-32acf84f42eb
