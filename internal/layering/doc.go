// Package layering holds no code: its test asserts the import rules between Lockstep's
// packages (DESIGN.md section 3, docs/architecture.md), so that a change which makes a
// lower layer depend on a higher one fails `go test ./...` instead of eroding the
// architecture unnoticed.
package layering
