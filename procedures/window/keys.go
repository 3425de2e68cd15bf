package window

import (
	"encoding/binary"
	"fmt"
)

// Row keys. Tables are ordered by key bytes, so every key is built to sort the way the
// package scans it:
//
//   - a time is 8 bytes big-endian with the sign bit flipped, so negative times sort
//     before positive ones;
//   - a window key (the grouping key of the records) is escaped, every 0x00 byte becoming
//     0x00 0xFF, and terminated by 0x00 0x01: the encoding keeps the keys' byte order and
//     no encoded key is a prefix of another, so one key's rows form one contiguous range.
//
// Window state rows are keyed by key‖start; fire and close queue rows by time‖key‖start.

const timeBytes = 8

// appendTime appends t in its order-preserving encoding.
func appendTime(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

// readTime decodes a time written by appendTime at the start of b.
func readTime(b []byte) (int64, bool) {
	if len(b) < timeBytes {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), true
}

// appendKey appends the escaped, terminated encoding of a window key.
func appendKey(b, key []byte) []byte {
	for _, c := range key {
		b = append(b, c)
		if c == 0 {
			b = append(b, 0xFF)
		}
	}
	return append(b, 0, 1)
}

// readKey decodes a key written by appendKey at the start of b, returning a fresh copy
// and the rest of b.
func readKey(b []byte) (key, rest []byte, ok bool) {
	key = []byte{}
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			key = append(key, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, false
		}
		switch b[i+1] {
		case 0xFF:
			key = append(key, 0)
			i++
		case 1:
			return key, b[i+2:], true
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// keyRange returns the bounds [lo, hi) of the rows whose key starts with key's encoding.
func keyRange(key []byte) (lo, hi []byte) {
	lo = appendKey(nil, key)
	hi = append(lo[:len(lo)-1:len(lo)-1], 2) // the terminator 0x00 0x01 bumped to 0x00 0x02
	return lo, hi
}

// stateKey is the row key of a window's state: key‖start.
func stateKey(key []byte, start int64) []byte {
	return appendTime(appendKey(nil, key), start)
}

// queueKey is the row key of a window in a fire or close queue: at‖key‖start.
func queueKey(at int64, key []byte, start int64) []byte {
	return appendTime(appendKey(appendTime(nil, at), key), start)
}

// parseQueueKey splits a queue row key into its parts.
func parseQueueKey(b []byte) (at int64, key []byte, start int64, err error) {
	at, ok := readTime(b)
	if ok {
		key, b, ok = readKey(b[timeBytes:])
	}
	if ok && len(b) == timeBytes {
		start, _ = readTime(b)
		return at, key, start, nil
	}
	return 0, nil, 0, fmt.Errorf("%w: queue key %x", ErrCorrupt, b)
}

// parseStateKey splits a state row key into its parts.
func parseStateKey(b []byte) (key []byte, start int64, err error) {
	key, rest, ok := readKey(b)
	if ok && len(rest) == timeBytes {
		start, _ = readTime(rest)
		return key, start, nil
	}
	return nil, 0, fmt.Errorf("%w: state key %x", ErrCorrupt, b)
}
