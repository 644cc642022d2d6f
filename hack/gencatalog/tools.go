//go:build tools

// This file keeps github.com/LeanerCloud/ec2-instances-info in go.mod (go mod
// tidy would drop it otherwise). The generator does not link the package: it
// reads data/instances.json from the module directory that `go mod download`
// reports, which avoids compiling 96 MB of embedded JSON into the generator.
package main

import _ "github.com/LeanerCloud/ec2-instances-info"
