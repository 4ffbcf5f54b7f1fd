//go:build tools

// Package tools pins kwok, which build.sh builds from this module so it shares the compiled
// k8s.io packages with triage-cp.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
