package kafka

import (
	"errors"
	"fmt"
)

// Errors of the source and the sink. Each failure wraps one of them (and the cause).
var (
	// ErrConfig: a Config field is missing or out of range.
	ErrConfig = errors.New("kafka: bad configuration")
	// ErrUnreachable: no Kafka broker of the configuration answered.
	ErrUnreachable = errors.New("kafka: broker unreachable")
	// ErrUnknownTopic: the Kafka topic does not exist.
	ErrUnknownTopic = errors.New("kafka: unknown topic")
	// ErrUnknownStream: the Lockstep stream does not exist.
	ErrUnknownStream = errors.New("kafka: unknown Lockstep stream")
	// ErrOffsetOutOfRange: the stored offset of a Kafka partition is no longer in the
	// partition (Kafka's retention deleted records the source had not brought in yet).
	// The source stops rather than skip them.
	ErrOffsetOutOfRange = errors.New("kafka: stored offset out of range")
	// ErrFenced: a newer sink instance took the sink partition's transactional id (Kafka
	// fenced this producer); this instance stops and writes nothing more.
	ErrFenced = errors.New("kafka: sink fenced by a newer instance")
	// ErrProgress: the sink's progress topic holds a record it cannot read, or is too
	// small for the stream.
	ErrProgress = errors.New("kafka: bad sink progress topic")
	// ErrTrimmed: the stream's retention trimmed records before the sink wrote them.
	ErrTrimmed = errors.New("kafka: records trimmed before the sink wrote them")
)

func configErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
}
