package plan

import (
	"fmt"
	"strings"
)

// Type is a SQL column or expression type. Values of each type are held in Go as:
//
//	TypeBigint    int64
//	TypeDouble    float64
//	TypeText      string
//	TypeBytea     []byte
//	TypeBoolean   bool
//	TypeTimestamp int64, Unix milliseconds, UTC (the engine's event-time unit)
//	TypeInterval  int64, milliseconds
//
// and NULL as nil, whatever the type.
type Type uint8

// The types. TypeNull is the type of a bare NULL literal, compatible with every type.
const (
	TypeNull Type = iota
	TypeBigint
	TypeDouble
	TypeText
	TypeBytea
	TypeBoolean
	TypeTimestamp
	TypeInterval
	typeEnd
)

var typeNames = [...]string{"null", "bigint", "double", "text", "bytea", "boolean", "timestamp", "interval"}

// String returns the type's SQL name.
func (t Type) String() string {
	if t < typeEnd {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Valid reports whether t is a column type (TypeNull is not).
func (t Type) Valid() bool { return t > TypeNull && t < typeEnd }

// Numeric reports whether t is bigint or double.
func (t Type) Numeric() bool { return t == TypeBigint || t == TypeDouble }

// Ordered reports whether values of t can be compared with < and >.
func (t Type) Ordered() bool { return t.Valid() }

// ParseType returns the type a PostgreSQL type name denotes (int8, float8, varchar… are
// accepted as their canonical names).
func ParseType(name string) (Type, bool) {
	switch strings.ToLower(name) {
	case "bigint", "int8", "int", "int4", "integer", "smallint", "int2":
		return TypeBigint, true
	case "double", "float8", "double precision", "float", "float4", "real":
		return TypeDouble, true
	case "text", "varchar", "character varying", "string":
		return TypeText, true
	case "bytea":
		return TypeBytea, true
	case "boolean", "bool":
		return TypeBoolean, true
	case "timestamp", "timestamptz":
		return TypeTimestamp, true
	case "interval":
		return TypeInterval, true
	}
	return TypeNull, false
}

// checkValue reports whether v is a valid Go value of type t (nil always is).
func checkValue(t Type, v any) bool {
	if v == nil {
		return true
	}
	switch t {
	case TypeBigint, TypeTimestamp, TypeInterval:
		_, ok := v.(int64)
		return ok
	case TypeDouble:
		_, ok := v.(float64)
		return ok
	case TypeText:
		_, ok := v.(string)
		return ok
	case TypeBytea:
		_, ok := v.([]byte)
		return ok
	case TypeBoolean:
		_, ok := v.(bool)
		return ok
	}
	return false
}
