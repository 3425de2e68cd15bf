package partition

// Size limits on what a Tx stores. Inputs beyond them fail with a typed error and change
// nothing. They bound memory per row and keep every replica's behaviour identical.
const (
	// MaxKeyBytes is the longest row key, in bytes.
	MaxKeyBytes = 1024
	// MaxValueBytes is the longest row value or stream record, in bytes (1 MiB).
	MaxValueBytes = 1 << 20
	// MaxNameBytes is the longest table or stream name, in bytes.
	MaxNameBytes = 128
)

func checkKey(key []byte) error {
	switch {
	case len(key) == 0:
		return ErrEmptyKey
	case len(key) > MaxKeyBytes:
		return ErrKeyTooLarge
	}
	return nil
}

func checkValue(v []byte) error {
	if len(v) > MaxValueBytes {
		return ErrValueTooLarge
	}
	return nil
}

func checkName(name string) error {
	if len(name) == 0 || len(name) > MaxNameBytes {
		return ErrBadName
	}
	return nil
}
