package partition

import (
	"reflect"
	"strconv"
	"strings"
)

// Bounds of panicText's rendering.
const (
	panicTextBytes = 512 // longest text
	panicTextDepth = 3   // pointers, structs and slices followed this deep
	panicTextElems = 8   // elements shown of a slice, array or struct
)

// panicText renders a recovered panic value as the text of a PanicError. The text is
// replicated (a session result, a dead letter), so it must be the same on every replica:
// fmt.Sprint prints a pointer, a map's pointers, a channel or a func as its address,
// which differs per process. So: a string is itself, an error its Error text (the
// runtime's errors are deterministic); anything else is its type and a bounded rendering
// of its value in which a pointer is shown by what it points to, and a chan, func or
// unsafe pointer only by its type.
func panicText(r any) string {
	switch v := r.(type) {
	case string:
		return bound(v)
	case error:
		return bound(v.Error())
	}
	var b strings.Builder
	rv := reflect.ValueOf(r)
	if !rv.IsValid() {
		return "nil"
	}
	b.WriteString(rv.Type().String())
	b.WriteString(": ")
	renderValue(&b, rv, 0)
	return bound(b.String())
}

// bound cuts s to panicTextBytes, marking the cut.
func bound(s string) string {
	if len(s) <= panicTextBytes {
		return s
	}
	return s[:panicTextBytes] + "…"
}

// renderValue writes v to b without addresses, depth levels deep; it stops writing once
// b holds panicTextBytes.
func renderValue(b *strings.Builder, v reflect.Value, depth int) {
	if b.Len() > panicTextBytes {
		return
	}
	switch v.Kind() {
	case reflect.Invalid:
		b.WriteString("nil")
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Complex64, reflect.Complex128:
		b.WriteString(strconv.FormatComplex(v.Complex(), 'g', -1, 128))
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Pointer, reflect.Interface:
		switch {
		case v.IsNil():
			b.WriteString("nil")
		case depth >= panicTextDepth:
			b.WriteString("…")
		default:
			if v.Kind() == reflect.Pointer {
				b.WriteByte('&')
			}
			renderValue(b, v.Elem(), depth+1)
		}
	case reflect.Struct:
		b.WriteByte('{')
		if depth >= panicTextDepth {
			b.WriteString("…")
		}
		for i := 0; i < v.NumField() && depth < panicTextDepth; i++ {
			if i == panicTextElems {
				b.WriteString(" …")
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v.Type().Field(i).Name)
			b.WriteByte(':')
			renderValue(b, v.Field(i), depth+1)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteByte('[')
		if depth >= panicTextDepth && v.Len() > 0 {
			b.WriteString("…")
		}
		for i := 0; i < v.Len() && depth < panicTextDepth; i++ {
			if i == panicTextElems {
				b.WriteString(" …")
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			renderValue(b, v.Index(i), depth+1)
		}
		b.WriteByte(']')
	case reflect.Map:
		// Its order and its values' addresses are the process's: only its size.
		b.WriteString("map of " + strconv.Itoa(v.Len()))
	default: // Chan, Func, UnsafePointer, Uintptr: an address, or nothing else to show
		b.WriteString(v.Type().String())
	}
}
