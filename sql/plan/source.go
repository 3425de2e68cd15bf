package plan

import (
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/partition"
	"github.com/vmihailenco/msgpack/v5"
)

// Sources (docs/sources.md, "CREATE SOURCE"): the definition of an external source that
// brings records into a stream, as CREATE SOURCE compiles it and the log carries it (a
// module of kind "source"). Replicas never run a source: they keep its definition, and
// the nodes run its workers (package connect), as the members of the source's consumer
// group. A source is immutable once deployed; DROP SOURCE removes it.

// SourceVersion is the format of an encoded Source. Decode refuses any other.
//
//	1  the first format
const SourceVersion = 1

// Connectors and formats of a source.
const (
	// ConnectorKafka reads a Kafka topic (read-committed), the only connector.
	ConnectorKafka = "kafka"
	// SourceFormatJSON: each record's value is a JSON object; into a stream with a SQL
	// schema, its fields are decoded into the columns (Schema.DecodeJSON).
	SourceFormatJSON = "json"
	// SourceFormatMsgpack: each record's value is one msgpack value; into a stream with a
	// SQL schema, a map from column name to value decoded into the columns.
	SourceFormatMsgpack = "msgpack"
	// SourceFormatRaw: each record's value is kept as it is (a stream without a SQL
	// schema only).
	SourceFormatRaw = "raw"
)

// Limits of a source definition.
const (
	// MaxSourceBrokers bounds the seed brokers of a source.
	MaxSourceBrokers = 64
	// MaxSourceTopicBytes is Kafka's own topic-name limit.
	MaxSourceTopicBytes = 249
	// MinSourceSessionTimeoutMs and MaxSourceSessionTimeoutMs bound how long a source's
	// group waits for a silent worker (a dead node) before giving its partitions to
	// another: the group's session timeout (builtin.MaxGroupSessionTimeoutMs is 5 min).
	MinSourceSessionTimeoutMs = 100
	MaxSourceSessionTimeoutMs = 300_000
	// DefaultSourceSessionTimeoutMs is the session timeout of a source that sets none.
	DefaultSourceSessionTimeoutMs = 10_000
)

// Source is a compiled CREATE SOURCE.
type Source struct {
	// Version is the format version (SourceVersion).
	Version int `msgpack:"version"`
	// Name names the source; it is also the consumer group its workers join, and the
	// partition key of its stored offsets and records.
	Name string `msgpack:"name"`
	// Connector is ConnectorKafka.
	Connector string `msgpack:"connector"`
	// Brokers are the Kafka seed brokers, host:port, as every node reaches them.
	Brokers []string `msgpack:"brokers"`
	// Topic is the Kafka topic read.
	Topic string `msgpack:"topic"`
	// Format is SourceFormatJSON, SourceFormatMsgpack or SourceFormatRaw.
	Format string `msgpack:"format"`
	// Stream is the stream the records are appended to; DeadLetter the stream of the
	// records that do not decode or do not fit Schema.
	Stream     string `msgpack:"stream"`
	DeadLetter string `msgpack:"dead"`
	// CreateDeadLetter: the deploy creates DeadLetter (the default one, Name+".dead"),
	// at its log index, with the source.
	CreateDeadLetter bool `msgpack:"create_dead,omitempty"`
	// Schema is Stream's SQL schema when it has one (a CREATE STREAM): records are decoded
	// into its columns. Nil for a stream without one (stream.create).
	Schema *Schema `msgpack:"schema,omitempty"`
	// SessionTimeoutMs is the group session timeout: a node whose worker stops
	// heartbeating for this long, in batch time, loses its partitions to the others.
	SessionTimeoutMs int64 `msgpack:"session_ms"`
}

// ModuleName returns the name of the module that carries the source: "source:" + Name,
// which no SQL relation or view name can take.
func (s *Source) ModuleName() string { return SourceModulePrefix + s.Name }

// SourceModulePrefix begins the module name of every source.
const SourceModulePrefix = "source:"

// Validate checks the definition's internal consistency.
func (s *Source) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: source %q: %s", ErrBadPlan, s.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Version != SourceVersion:
		return fmt.Errorf("%w: source format %d, this binary runs %d", ErrVersion, s.Version, SourceVersion)
	case s.Name == "" || len(s.Name) > partition.MaxNameBytes || strings.ContainsAny(s.Name, "\x00@/\\ \t\n"):
		return bad("name of %d bytes", len(s.Name))
	case s.Connector != ConnectorKafka:
		return bad("connector %q", s.Connector)
	case len(s.Brokers) == 0 || len(s.Brokers) > MaxSourceBrokers:
		return bad("%d brokers (1 to %d)", len(s.Brokers), MaxSourceBrokers)
	case s.Topic == "" || len(s.Topic) > MaxSourceTopicBytes || strings.IndexByte(s.Topic, 0) >= 0:
		return bad("topic %q", s.Topic)
	case s.Format != SourceFormatJSON && s.Format != SourceFormatMsgpack && s.Format != SourceFormatRaw:
		return bad("format %q", s.Format)
	case s.Stream == "" || s.DeadLetter == "" || s.Stream == s.DeadLetter:
		return bad("stream %q, dead-letter stream %q", s.Stream, s.DeadLetter)
	case s.SessionTimeoutMs < MinSourceSessionTimeoutMs || s.SessionTimeoutMs > MaxSourceSessionTimeoutMs:
		return bad("session timeout %d ms", s.SessionTimeoutMs)
	case s.Schema != nil && s.Format == SourceFormatRaw:
		return bad("format raw into stream %s, which has a SQL schema", s.Stream)
	}
	for _, b := range s.Brokers {
		if b == "" || strings.ContainsAny(b, " \t\n,") {
			return bad("broker %q", b)
		}
	}
	if s.Schema != nil {
		if err := s.Schema.Validate(); err != nil {
			return err
		}
		if s.Schema.Name != s.Stream || s.Schema.Kind != KindStream {
			return bad("schema of %s %s for stream %s", s.Schema.Kind, s.Schema.Name, s.Stream)
		}
	}
	return nil
}

// Streams returns the streams the deploy of the source creates: its dead-letter stream
// when CreateDeadLetter.
func (s *Source) Streams() []StreamDef {
	if !s.CreateDeadLetter {
		return nil
	}
	return []StreamDef{{Name: s.DeadLetter}}
}

// Encode returns the definition's encoding.
func (s *Source) Encode() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return msgpack.Marshal(s)
}

// DecodeSource decodes and validates an encoded Source.
func DecodeSource(b []byte) (*Source, error) {
	var s Source
	if err := msgpack.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: source: %w", ErrBadPlan, err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}
