package demo

import (
	"errors"
	"testing"
	"time"
)

// TestConfigValidate: the defaults are valid; a non-positive size, count or duration and
// a sink schema with a dot are refused with ErrBadConfig.
func TestConfigValidate(t *testing.T) {
	if err := DefaultPipelineConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for i, mod := range []func(*PipelineConfig){
		func(c *PipelineConfig) { c.Nodes = 0 },
		func(c *PipelineConfig) { c.Partitions = -1 },
		func(c *PipelineConfig) { c.Clients = 0 },
		func(c *PipelineConfig) { c.Duration = -time.Second },
		func(c *PipelineConfig) { c.SinkDSN, c.SinkSchema = "postgres://x", "a.b" },
		func(c *PipelineConfig) { c.SinkDSN, c.SinkSchema = "postgres://x", "" },
	} {
		c := DefaultPipelineConfig()
		mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("#%d: got %v, want ErrBadConfig", i, err)
		}
	}
}
