package kafka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"
)

// Format is how a source turns a Kafka record's value into a Lockstep record's value.
type Format string

// The formats.
const (
	// FormatRaw keeps the value's bytes as they are.
	FormatRaw Format = "raw"
	// FormatJSON takes a JSON object and stores it as a msgpack map (keys sorted, integers
	// as integers, other numbers as float64). Anything else is a malformed record.
	FormatJSON Format = "json"
	// FormatMsgpack takes one msgpack value and keeps its bytes. Anything else (no value,
	// bytes after it) is a malformed record.
	FormatMsgpack Format = "msgpack"
)

// Decoder turns a Kafka record (its key, value and timestamp in Unix milliseconds) into
// the Lockstep record's key, value and event time (Unix milliseconds), or refuses it:
// the error's text is the dead letter's reason. It is called from the worker's
// goroutine only.
type Decoder interface {
	Decode(key, value []byte, timestampMs int64) (outKey, outValue []byte, eventTimeMs int64, err error)
}

// Limits of a Lockstep record (partition.MaxKeyBytes and a margin under
// partition.MaxValueBytes for the rest of a source.append request): a Kafka record past
// them is a dead letter, never a batch that can never be appended.
const (
	maxKeyBytes   = 1024
	maxValueBytes = 1<<20 - 64<<10
)

var errMalformed = errors.New("malformed record")

// decode returns the Lockstep value of a Kafka value, or an error wrapping errMalformed
// with the reason.
func (f Format) decode(v []byte) ([]byte, error) {
	var out []byte
	switch f {
	case FormatRaw, "":
		out = v
	case FormatJSON:
		var err error
		if out, err = jsonToMsgpack(v); err != nil {
			return nil, err
		}
	case FormatMsgpack:
		rd := bytes.NewReader(v)
		if err := msgpack.NewDecoder(rd).Skip(); err != nil {
			return nil, fmt.Errorf("%w: not msgpack: %v", errMalformed, err)
		}
		if rd.Len() != 0 {
			return nil, fmt.Errorf("%w: %d bytes after the msgpack value", errMalformed, rd.Len())
		}
		out = v
	default:
		return nil, configErr("format %q (raw, json or msgpack)", f)
	}
	if len(out) > maxValueBytes {
		return nil, fmt.Errorf("%w: value of %d bytes, limit %d", errMalformed, len(out), maxValueBytes)
	}
	return out, nil
}

func jsonToMsgpack(v []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %v", errMalformed, err)
	}
	if m == nil {
		return nil, fmt.Errorf("%w: not a JSON object: null", errMalformed)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON object", errMalformed)
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(numbers(m)); err != nil {
		return nil, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return buf.Bytes(), nil
}

// numbers replaces every json.Number in v by an int64 when it is one, else a float64.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64() // json.Decoder checked the syntax
		return f
	}
	return v
}

// DeadLetter is the value of a dead-letter record (msgpack): a Kafka record the source
// could not bring in, and why. Its key is "topic/partition/offset".
type DeadLetter struct {
	Topic     string `msgpack:"topic"`
	Partition int32  `msgpack:"partition"`
	Offset    int64  `msgpack:"offset"`
	Reason    string `msgpack:"reason"`
	Key       []byte `msgpack:"key"`
	Value     []byte `msgpack:"value"`
	// TimestampMs is the Kafka record's timestamp, Unix milliseconds.
	TimestampMs int64 `msgpack:"ts"`
}
