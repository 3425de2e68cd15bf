package window

import (
	"errors"
	"testing"

	"github.com/lockstepdb/lockstep/partition"
)

func TestNewSourceValidate(t *testing.T) {
	for i, c := range []SourceConfig{
		{},
		{Stream: "out", OutOfOrderness: -1},
		{Stream: "out", IdleTimeout: MaxSpan + 1},
	} {
		if _, err := NewSource(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: NewSource(%+v) = %v, want ErrBadConfig", i, c, err)
		}
	}
	if _, err := NewSource(SourceConfig{Stream: "out", OutOfOrderness: 5, IdleTimeout: 10}); err != nil {
		t.Errorf("NewSource: %v", err)
	}
}

// TestExchangeOperatorConfig: an operator whose watermark comes from the exchange has
// no out-of-orderness or processing time of its own, and refuses Process (it needs each
// record's stamp).
func TestExchangeOperatorConfig(t *testing.T) {
	base := func() Config[int64, agg] {
		return Config[int64, agg]{Name: "w", Assigner: Tumbling{10}, Exchange: "in",
			Init: func() agg { return agg{} }, Add: addAgg, Emit: func(*partition.Tx, Result[agg]) error { return nil }}
	}
	for i, mod := range []func(*Config[int64, agg]){
		func(c *Config[int64, agg]) { c.OutOfOrderness = 1 },
		func(c *Config[int64, agg]) { c.ProcessingTime = true },
	} {
		c := base()
		mod(&c)
		if _, err := New(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: New = %v, want ErrBadConfig", i, err)
		}
	}
	op, err := New(base())
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Process(nil, []byte("k"), 1, 1); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Process on an exchange operator: %v, want ErrBadConfig", err)
	}
}
