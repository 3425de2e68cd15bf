// Package kafka connects Lockstep to Apache Kafka, exactly once in both directions
// (docs/sources.md, docs/sinks.md):
//
//   - Source reads Kafka topic partitions (read-committed) and appends their records to a
//     Lockstep stream through the source.append built-in, which appends a batch and stores
//     the Kafka offset after it in one atomic step, fenced by the consumer-group generation
//     and by the stored offset itself. Which worker reads which Kafka partition is decided
//     by a Lockstep consumer group.
//   - Sink copies a Lockstep stream into a Kafka topic with Kafka transactions, one
//     transactional id per stream partition, and commits the Lockstep offset inside the
//     same transaction as a record of a progress topic, from which it resumes.
//
// It is a user of the client package, as any application is, plus franz-go.
package kafka
