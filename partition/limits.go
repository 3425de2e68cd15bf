package partition

import "fmt"

// Size limits on what a Tx stores. Inputs beyond them fail with a typed error and change
// nothing. They bound memory per row and keep every replica's behaviour identical.
const (
	// MaxKeyBytes is the longest row key, in bytes.
	MaxKeyBytes = 1024
	// MaxValueBytes is the longest row value or stream record, in bytes (1 MiB).
	MaxValueBytes = 1 << 20
	// MaxNameBytes is the longest table or stream name, in bytes.
	MaxNameBytes = 128
	// DefaultMaxResultBytes is the default of Config.MaxResultBytes, the longest encoded
	// result an input may return (1 MiB).
	DefaultMaxResultBytes = 1 << 20
	// MaxResultBytesLimit is the highest Config.MaxResultBytes accepted: the client
	// protocol's 4 MiB frame less 64 KiB for the rest of a response (its id, code, message
	// and session), so that every result an input may return also fits one response frame.
	MaxResultBytesLimit = 4<<20 - 64<<10
)

// SetMaxResultBytes changes the engine's result limit (Config.MaxResultBytes) to n, 1 to
// MaxResultBytesLimit, for the inputs of every later Execute and for later queries. The
// limit decides replicated results, so a replica changes it only at a log position (the
// replicated cluster configuration), between Executes, from the goroutine that calls
// them. A value out of range is refused with ErrBadConfig and changes nothing.
func (e *Engine) SetMaxResultBytes(n int) error {
	if n < 1 || n > MaxResultBytesLimit {
		return fmt.Errorf("%w: max result bytes %d not in 1..%d", ErrBadConfig, n, MaxResultBytesLimit)
	}
	e.maxResult.Store(int64(n))
	return nil
}

// MaxResultBytes returns the engine's result limit in bytes (see SetMaxResultBytes).
func (e *Engine) MaxResultBytes() int { return int(e.maxResult.Load()) }

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

// checkResult reports whether an encoded result of n bytes is within limit.
func checkResult(n, limit int) error {
	if n > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrResultTooLarge, n, limit)
	}
	return nil
}
