// Package canon writes msgpack in a canonical form: every map's entries sorted by their
// encoded keys. msgpack/v5 encodes a Go map in Go's random iteration order (its
// SetSortMapKeys covers only map[string]string, map[string]bool and
// map[string]interface{}), but bytes that replicas hash or cache — procedure results,
// window state — must be equal on every replica (DESIGN.md invariant 1).
package canon
