package modbench

import _ "embed" // the module's source

// Names the benchmark's two implementations share.
const (
	// ModuleName is the module's name when deployed.
	ModuleName = "modbench"
	// Stream is the processor's input stream.
	Stream = "modbench.clicks"
	// Processor is the processor's name, in both implementations.
	Processor = "modbench.count"
	// Total is the read-only multi-partition procedure that sums the counts.
	Total = "modbench.total"
	// Table holds the counts, one row per page and window.
	Table = "modbench.windows"
	// WindowMs is the tumbling window's length in milliseconds of event time.
	WindowMs = 1000
)

// Source is the Starlark module (module.star).
//
//go:embed module.star
var Source []byte
