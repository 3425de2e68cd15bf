package wire

// ProcessorStatus is one processor on one partition as a node's applied state has it: an
// element of the msgpack array in the Value of an OpProcessors response. Its JSON names
// are the same as the client's ProcessorStatus.
type ProcessorStatus struct {
	// Processor is the processor's name, Input the stream it consumes.
	Processor string `msgpack:"name" json:"processor"`
	Input     string `msgpack:"input" json:"input"`
	Partition int    `msgpack:"part" json:"partition"`
	// Version is the running version of its code, Origin where the code comes from:
	// "binary" or "module NAME vN".
	Version uint32 `msgpack:"ver,omitempty" json:"version,omitempty"`
	Origin  string `msgpack:"origin,omitempty" json:"origin,omitempty"`
	// Waiting is set while the input stream does not exist (or the processor has had no
	// phase since it appeared); the offsets and counts are then zero.
	Waiting bool `msgpack:"waiting,omitempty" json:"waiting"`
	// Position is the next offset the processor handles, End the input's next offset on
	// the partition, Lag the records between them.
	Position uint64 `msgpack:"pos,omitempty" json:"position"`
	End      uint64 `msgpack:"end,omitempty" json:"end"`
	Lag      uint64 `msgpack:"lag,omitempty" json:"lag"`
	// DeadLetters counts records sent to the dead-letter stream, Skipped those trimmed by
	// retention before the processor reached them.
	DeadLetters uint64 `msgpack:"dead,omitempty" json:"dead_letters"`
	Skipped     uint64 `msgpack:"skipped,omitempty" json:"skipped"`
	// TickErrors counts failed OnTick calls; TickFailing is set while the last failed.
	TickErrors  uint64 `msgpack:"ticks,omitempty" json:"tick_errors"`
	TickFailing bool   `msgpack:"tickfail,omitempty" json:"tick_failing"`
	// Windows are the window operators the processor declares, by name.
	Windows []WindowStatus `msgpack:"windows,omitempty" json:"windows,omitempty"`
}

// WindowStatus is one window operator of a processor on one partition.
type WindowStatus struct {
	// Operator is the operator's name (window.Config.Name).
	Operator string `msgpack:"op" json:"operator"`
	// Watermark is the operator's watermark in Unix milliseconds; valid if HasWatermark
	// (false before the operator's first record on the partition).
	Watermark    int64 `msgpack:"wm,omitempty" json:"watermark_ms"`
	HasWatermark bool  `msgpack:"hwm,omitempty" json:"has_watermark"`
	// Late counts records that fell in no open window.
	Late uint64 `msgpack:"late,omitempty" json:"late"`
}
