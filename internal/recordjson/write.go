package recordjson

import (
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// Record is one line of `lockstep stream read --output json`.
type Record struct {
	// Stream, Partition and Offset say where the record is.
	Stream    string `json:"stream"`
	Partition int    `json:"partition"`
	Offset    uint64 `json:"offset"`
	// Key is the record's key (base64 in JSON); KeyText the same as a string, if UTF-8.
	Key     []byte  `json:"key"`
	KeyText *string `json:"key_text,omitempty"`
	// EventTime is the record's event time, RFC 3339 with milliseconds, UTC.
	EventTime string `json:"event_time"`
	// Data is the record's value (base64 in JSON); Text the same as a string, if UTF-8.
	Data []byte  `json:"data"`
	Text *string `json:"text,omitempty"`
	// Value is the value as JSON of its type, for a stream whose value type is known
	// (--value-type), or, for a stream of raw bytes, the bytes themselves when they are a
	// JSON document; ValueError says why a value is not one of the stream's type.
	Value      any    `json:"value,omitempty"`
	ValueError string `json:"value_error,omitempty"`
}

// EventTimeFormat prints event times: RFC 3339, milliseconds, UTC.
const EventTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// WriteRecords prints records of one partition of stream in format (a table row or a
// JSON line each), their values as JSON of vt if not nil.
func WriteRecords(w io.Writer, format, stream string, part int, vt *schema.Type, recs []client.Record) error {
	for _, r := range recs {
		if format == cliout.Table {
			if _, err := fmt.Fprintf(w, "%-10d %-24s %-16s %s\n", r.Offset, r.EventTime.Format(EventTimeFormat), cliout.BytesText(r.Key), ValueCell(vt, r.Data)); err != nil {
				return err
			}
			continue
		}
		line := Record{Stream: stream, Partition: part, Offset: r.Offset, Key: r.Key,
			EventTime: r.EventTime.Format(EventTimeFormat), Data: r.Data}
		if utf8.Valid(r.Data) {
			s := string(r.Data)
			line.Text = &s
		}
		if utf8.Valid(r.Key) {
			k := string(r.Key)
			line.KeyText = &k
		}
		switch {
		case vt != nil:
			if v, err := DecodeValue(vt, r.Data); err != nil {
				line.ValueError = err.Error()
			} else {
				line.Value = v
			}
		case json.Valid(r.Data):
			line.Value = json.RawMessage(r.Data) // raw bytes that are a JSON document
		}
		b, err := json.Marshal(line)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
	return nil
}

// WriteTail prints records of one partition as `stream tail` does: in a table, each row
// led by the partition; as WriteRecords for JSON.
func WriteTail(w io.Writer, format, stream string, vt *schema.Type, recs []client.Record) error {
	part := recs[0].Partition
	if format != cliout.Table {
		return WriteRecords(w, format, stream, part, vt, recs)
	}
	for _, r := range recs {
		if _, err := fmt.Fprintf(w, "%-9d %-10d %-24s %-16s %s\n", part, r.Offset, r.EventTime.Format(EventTimeFormat), cliout.BytesText(r.Key), ValueCell(vt, r.Data)); err != nil {
			return err
		}
	}
	return nil
}
