package recordjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// maxLine bounds one line of input: a record's key and value, base64 and JSON.
const maxLine = 4 << 20

// inputLine is one line of stream append's stdin: the fields of Record it reads, and
// the others so that a line of stream read is accepted as it is.
type inputLine struct {
	Key        []byte          `json:"key"`
	KeyText    *string         `json:"key_text"`
	EventTime  json.RawMessage `json:"event_time"`
	Data       []byte          `json:"data"`
	Text       *string         `json:"text"`
	Value      json.RawMessage `json:"value"`
	Stream     string          `json:"stream"`
	Partition  int             `json:"partition"`
	Offset     uint64          `json:"offset"`
	ValueError string          `json:"value_error"`
}

// ParseEventTime reads a JSON event time: an RFC 3339 string or a number of Unix
// milliseconds; empty or null is the zero time (the batch time).
func ParseEventTime(raw string) (time.Time, error) {
	raw = string(bytes.TrimSpace([]byte(raw)))
	switch {
	case raw == "" || raw == "null":
		return time.Time{}, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			return time.Time{}, err
		}
		return time.Parse(time.RFC3339Nano, s)
	}
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}

// ReadLines decodes the records of r, one JSON object a line (blank lines are
// skipped), and hands each to add.
func ReadLines(r io.Reader, vt *schema.Type, add func(client.StreamRecord) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rec, err := LineRecord(line, vt)
		if err != nil {
			return fmt.Errorf("stdin line %d: %w", n, err)
		}
		if err := add(rec); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("stdin: %w", err)
	}
	return nil
}

// LineRecord decodes one line of ReadLines' input.
func LineRecord(line []byte, vt *schema.Type) (client.StreamRecord, error) {
	var l inputLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return client.StreamRecord{}, fmt.Errorf("not a record object: %w", err)
	}
	rec := client.StreamRecord{Key: l.Key}
	if l.KeyText != nil {
		rec.Key = []byte(*l.KeyText)
	}
	if len(rec.Key) == 0 {
		return rec, errors.New("no key (key_text or key)")
	}
	et, err := ParseEventTime(string(l.EventTime))
	if err != nil {
		return rec, fmt.Errorf("event_time %s: want RFC 3339 or Unix milliseconds", l.EventTime)
	}
	rec.EventTime = et
	switch {
	case len(l.Value) > 0 && vt != nil:
		if rec.Value, err = EncodeValue(vt, l.Value); err != nil {
			return rec, err
		}
	case l.Data != nil:
		rec.Value = l.Data
	case l.Text != nil:
		rec.Value = []byte(*l.Text)
	case len(l.Value) > 0:
		// A stream of raw bytes holding JSON documents: the value's JSON text is the bytes.
		var b bytes.Buffer
		if err := json.Compact(&b, l.Value); err != nil {
			return rec, fmt.Errorf("value: %w", err)
		}
		rec.Value = b.Bytes()
	}
	return rec, nil
}
