package window

// A window state whose value is a plain int64, int, float64, string or bool (a count, a
// sum, a maximum: most aggregates) is encoded and decoded here with the encoder's and
// decoder's typed calls instead of its reflection over windowState: the same calls, in
// the same order, that reflection makes for windowState's fields, so the same bytes
// (TestScalarStateCodec checks them against msgpack.Marshal).

// encodeScalar writes st as the encoder writes the as_array struct windowState[S] and
// reports whether S is one of the types above.
func encodeScalar[S any](c *stateCodec, st *windowState[S]) (bool, error) {
	e := c.enc
	write := func(value func() error) (bool, error) {
		if err := e.EncodeArrayLen(3); err != nil {
			return true, err
		}
		if err := e.EncodeInt64(st.End); err != nil { // int64: its 9-byte form, as reflection writes it
			return true, err
		}
		if err := e.EncodeInt(int64(st.Emitted)); err != nil { // int: its shortest form
			return true, err
		}
		return true, value()
	}
	switch v := any(&st.Value).(type) {
	case *int64:
		return write(func() error { return e.EncodeInt64(*v) })
	case *int:
		return write(func() error { return e.EncodeInt(int64(*v)) })
	case *float64:
		return write(func() error { return e.EncodeFloat64(*v) })
	case *string:
		return write(func() error { return e.EncodeString(*v) })
	case *bool:
		return write(func() error { return e.EncodeBool(*v) })
	}
	return false, nil
}

// decodeScalar reads st as written by encodeScalar and reports whether it did; if not
// (another type of value, another layout, an error), st is as it was and the caller
// decodes by reflection, which also gives the errors.
func decodeScalar[S any](c *stateCodec, b []byte, st *windowState[S]) bool {
	if len(b) == 0 || b[0] != 0x93 { // a 3-element array
		return false
	}
	switch any(&st.Value).(type) {
	case *int64, *int, *float64, *string, *bool:
	default:
		return false
	}
	c.r.Reset(b[1:])
	c.dec.Reset(&c.r)
	d := c.dec
	end, err := d.DecodeInt64()
	if err != nil {
		return false
	}
	emitted, err := d.DecodeInt64()
	if err != nil || int64(int(emitted)) != emitted {
		return false
	}
	var value S
	switch v := any(&value).(type) {
	case *int64:
		*v, err = d.DecodeInt64()
	case *int:
		var n int64
		n, err = d.DecodeInt64()
		*v = int(n)
	case *float64:
		*v, err = d.DecodeFloat64()
	case *string:
		*v, err = d.DecodeString()
	case *bool:
		*v, err = d.DecodeBool()
	}
	if err != nil {
		return false
	}
	st.End, st.Emitted, st.Value = end, int(emitted), value
	return true
}
