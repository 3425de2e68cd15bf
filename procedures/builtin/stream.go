package builtin

// StreamAppendArgs are the arguments of stream.append.
type StreamAppendArgs struct {
	// Stream names the output stream, 1 to partition.MaxNameBytes (128) bytes.
	Stream string `msgpack:"s"`
	// Record is the record appended, at most partition.MaxValueBytes (1 MiB).
	Record []byte `msgpack:"r"`
}
