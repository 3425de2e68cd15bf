//go:build lockstep_kafka_splitstep

package planted

// KafkaSplitStep is a planted bug, for the Kafka source's tests only (client/kafka):
// built with -tags lockstep_kafka_splitstep, the source appends a batch's records in one
// unfenced step (procedures/source_planted.go: a source.append with Next = From checks
// nothing) and stores the Kafka offset in a second one, the at-least-once connector.
// A worker killed between the steps, or a zombie worker, doubles records; the tests of
// client/kafka must catch it (docs/sources.md).
const KafkaSplitStep = true
