package builtin

// StreamAppendArgs are the arguments of stream.append. The record's key is the
// invocation's partition key.
type StreamAppendArgs struct {
	// Stream names the stream, which stream.create must have created.
	Stream string `msgpack:"s"`
	// Record is the record's value, at most partition.MaxValueBytes (1 MiB).
	Record []byte `msgpack:"r"`
	// EventTime is the record's event time in Unix milliseconds; 0 means the batch time
	// of the append.
	EventTime int64 `msgpack:"t,omitempty"`
}

// StreamRecord is one record of stream.append_batch.
type StreamRecord struct {
	// Key is the record's key, 1 to partition.MaxKeyBytes bytes; it chooses the record's
	// partition, hash(key) mod P.
	Key []byte `msgpack:"k"`
	// Value is the record's value, at most partition.MaxValueBytes.
	Value []byte `msgpack:"v"`
	// EventTime is the record's event time in Unix milliseconds; 0 means the batch time.
	EventTime int64 `msgpack:"t,omitempty"`
}

// StreamAppendBatchArgs are the arguments of stream.append_batch, a multi-partition
// input whose scope must hold the partitions of every record's key (invoke it with the
// records' keys as its key set).
type StreamAppendBatchArgs struct {
	// Stream names the stream.
	Stream string `msgpack:"s"`
	// Records are appended in order; records of one partition get ascending offsets.
	Records []StreamRecord `msgpack:"r"`
}

// StreamRetention bounds what a stream keeps per partition. Each bound ≥ 0; 0 is
// unbounded. Trimming takes records from the front of a partition's log.
type StreamRetention struct {
	// MaxRecords is the most live records per partition.
	MaxRecords int64 `msgpack:"n,omitempty"`
	// MaxBytes is the most bytes (keys and values of live records) per partition.
	MaxBytes int64 `msgpack:"b,omitempty"`
	// MaxAgeMs trims records whose event time is older than the batch time of an append
	// to that partition minus MaxAgeMs milliseconds.
	MaxAgeMs int64 `msgpack:"a,omitempty"`
}

// StreamDefinition is a stream's definition: the arguments of stream.create, and what
// stream.list and stream.describe return.
type StreamDefinition struct {
	// Name is the stream's name, 1 to partition.MaxNameBytes (128) bytes.
	Name string `msgpack:"s"`
	// Retention bounds each partition's log.
	Retention StreamRetention `msgpack:"ret,omitempty"`
	// Compact keeps only the latest record of each key.
	Compact bool `msgpack:"c,omitempty"`
}

// StreamNameArgs are the arguments of stream.delete and stream.describe.
type StreamNameArgs struct {
	// Name is the stream's name.
	Name string `msgpack:"s"`
}

// StreamPartitionInfo describes one partition's log of a stream.
type StreamPartitionInfo struct {
	// Partition is the partition's number.
	Partition int32 `msgpack:"p"`
	// FirstOffset is the lowest offset retention has not trimmed.
	FirstOffset uint64 `msgpack:"f"`
	// NextOffset is the offset of the next append.
	NextOffset uint64 `msgpack:"n"`
	// Records is the number of live records (not trimmed, not compacted away).
	Records int64 `msgpack:"r"`
	// Bytes is the bytes of the live records' keys and values.
	Bytes int64 `msgpack:"b"`
}

// StreamDescription is the result of stream.describe.
type StreamDescription struct {
	// Definition is the stream's definition.
	Definition StreamDefinition `msgpack:"d"`
	// Partitions describe the partitions of the input's scope, in partition order.
	Partitions []StreamPartitionInfo `msgpack:"p"`
}
