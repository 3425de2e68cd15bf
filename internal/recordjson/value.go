package recordjson

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockstepdb/lockstep/internal/cliout"
	"github.com/lockstepdb/lockstep/procedures"
	"github.com/lockstepdb/lockstep/procedures/schema"
)

// The --value-type values besides a type's name.
const (
	ValueTypeAuto = "auto"
	ValueTypeRaw  = "raw"
)

// ValueType resolves the value type name (--value-type) for stream: nil means raw bytes.
func ValueType(name, stream string) (*schema.Type, error) {
	switch name {
	case ValueTypeRaw:
		return nil, nil
	case ValueTypeAuto:
		if name = procedures.DefaultStreamValueType(stream); name == "" {
			return nil, nil
		}
	}
	rt, ok := procedures.StreamValueTypes()[name]
	if !ok {
		return nil, fmt.Errorf("--value-type %q: want %s, %s or one of %s", name, ValueTypeAuto, ValueTypeRaw,
			strings.Join(procedures.StreamValueTypeNames(), ", "))
	}
	t := schema.Of(rt)
	return &t, nil
}

// DecodeValue returns data as a JSON-printable value of vt, or an error if it is not one.
func DecodeValue(vt *schema.Type, data []byte) (any, error) {
	v, err := schema.DecodeJSON(vt, data)
	if err != nil {
		return nil, fmt.Errorf("value is not a %s: %w", vt.Name, err)
	}
	return v, nil
}

// ValueCell renders a record's value for a table: compact JSON of vt if it decodes as
// one, else the bytes (cliout.BytesText).
func ValueCell(vt *schema.Type, data []byte) string {
	if vt != nil {
		if v, err := DecodeValue(vt, data); err == nil {
			if b, err := json.Marshal(v); err == nil {
				return string(b)
			}
		}
	}
	return cliout.BytesText(data)
}

// EncodeValue turns text into a record value: the msgpack encoding of the JSON text as a
// vt, or the text's bytes when vt is nil.
func EncodeValue(vt *schema.Type, text []byte) ([]byte, error) {
	if vt == nil {
		return append([]byte(nil), text...), nil
	}
	v, err := schema.EncodeJSON(vt, text)
	if err != nil {
		return nil, fmt.Errorf("value %s: not a %s: %w", text, vt.Name, err)
	}
	return v, nil
}
