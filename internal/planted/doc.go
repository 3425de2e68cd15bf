// Package planted holds the switches of the planted bugs: one boolean constant per build
// tag, true only in a build made with that tag, false in every other build (so the
// compiler drops the bug's code from a release), in the manner of pebble's
// internal/invariants.
//
// A planted bug exists so that a checker can be shown to fail: the fault-injection harness
// (jepsen/) and a few tests build the node with one tag and prove that the bug is caught.
// The code of each bug lives where it acts, behind `if planted.X`; this package holds only
// the switches, so every tag is listed in one place:
//
//  1. jepsen_ackcache  → AckCache:  the session table caches results past the ack point.
//  2. jepsen_clockbug  → ClockBug:  batch time is not clamped against going backwards.
//  3. jepsen_lostwrite → LostWrite: a node acknowledges some writes without the log.
//  4. jepsen_nodedup   → NoDedup:   a retried request runs again.
//  5. jepsen_nosync    → NoSync:    the crash-model log store fsyncs only periodically.
//  6. jepsen_staleread → StaleRead: a leader answers reads without a quorum round.
//  7. lockstep_nondet  → Nondet:    the test.nondet procedure, which writes per-node values.
//  8. lockstep_kafka_splitstep → KafkaSplitStep: the Kafka source stores its offset in a
//     step of its own, after the records (at-least-once).
//
// Contract: never build a release with any of these tags. Each switch is a constant, so
// a normal build carries none of the bugs' behaviour.
package planted
