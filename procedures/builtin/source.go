package builtin

// Sources: the built-ins that let a worker outside the cluster (package client/kafka)
// bring records of an external, re-settable log (a Kafka topic partition) into a stream
// exactly once. A source is a consumer group (its name is the group's name, its stream
// the group's stream) whose members own external partitions instead of stream
// partitions: external partition k belongs to the member that owns stream partition
// k mod P. Its state lives on the group's home partition, so source.append is a
// single-partition input keyed by the source's name, and every record of the source
// lands on that partition, in the external order. See docs/sources.md.

// Names of the source built-ins.
const (
	SourceAppend  = "source.append"
	SourceOffsets = "source.offsets"
)

// MaxSourceTopicBytes is the longest external topic name source.append takes (Kafka's
// own limit is 249).
const MaxSourceTopicBytes = 249

// SourceAppendArgs are the arguments of source.append: one batch of one external
// partition, read from From on, and the offset after it.
type SourceAppendArgs struct {
	// Member is the worker's member id in the source's group.
	Member string `msgpack:"m"`
	// Generation is the group generation the worker holds its assignment in; an older one
	// fails with StaleGeneration, so a zombie worker appends nothing.
	Generation uint64 `msgpack:"g"`
	// Topic and Partition name the external partition.
	Topic     string `msgpack:"tp"`
	Partition int32  `msgpack:"p"`
	// From is the stored next offset the batch was read from (0 when none is stored):
	// the batch is appended only if it still is, which makes a retry, a restart or a
	// racing worker fail instead of doubling records.
	From uint64 `msgpack:"f"`
	// Next is the external offset after the batch's last record; it becomes the stored
	// offset. It must be above From.
	Next uint64 `msgpack:"n"`
	// Records are appended to the group's stream, in order.
	Records []SourceRecord `msgpack:"r"`
	// DeadLetter is the stream of the records that could not be decoded; empty when Dead
	// is empty.
	DeadLetter string `msgpack:"d,omitempty"`
	// Dead are appended to DeadLetter, in order.
	Dead []SourceRecord `msgpack:"x,omitempty"`
}

// SourceRecord is one record source.append appends.
type SourceRecord struct {
	// Key is the record's key (1 to partition.MaxKeyBytes bytes).
	Key []byte `msgpack:"k"`
	// Value is the record's value.
	Value []byte `msgpack:"v"`
	// EventTime is its event time, Unix milliseconds; 0 means the batch time.
	EventTime int64 `msgpack:"t,omitempty"`
}

// SourceOffset is one stored offset of a source, as source.offsets returns them.
type SourceOffset struct {
	// Topic and Partition name the external partition.
	Topic     string `msgpack:"tp"`
	Partition int32  `msgpack:"p"`
	// Next is the external offset of the next record to bring in.
	Next uint64 `msgpack:"n"`
	// Generation is the group generation of the batch that stored it.
	Generation uint64 `msgpack:"g"`
}
