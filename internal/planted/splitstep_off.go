//go:build !lockstep_kafka_splitstep

package planted

// KafkaSplitStep is false: the planted bug that splits the Kafka source's exactly-once
// step in two is built only with -tags lockstep_kafka_splitstep.
const KafkaSplitStep = false
