package abrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Pairs runs base Pairs times for each engine of engines in turn (A B A B ...), each run
// on a new cluster in a new folder under base.Dir (removed after the run), calling done
// with each result as it comes. It stops at the first failed run.
func Pairs(ctx context.Context, base Config, engines []string, pairs int, done func(Result)) ([]Result, error) {
	if pairs < 1 {
		return nil, fmt.Errorf("%w: %d pairs: want at least 1", ErrBadConfig, pairs)
	}
	if len(engines) == 0 {
		return nil, fmt.Errorf("%w: no engine", ErrBadConfig)
	}
	for _, e := range engines {
		c := base
		c.Engine = e
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	var out []Result
	for p := range pairs {
		for _, e := range engines {
			c := base
			c.Engine = e
			c.Dir = filepath.Join(base.Dir, fmt.Sprintf("%s-%d-%d", e, c.Nodes, p))
			if c.ProfileFile != "" {
				c.ProfileFile = fmt.Sprintf("%s.%s.%d.pprof", base.ProfileFile, e, p)
			}
			r, err := Run(ctx, c)
			os.RemoveAll(c.Dir)
			if err != nil {
				return out, fmt.Errorf("%s run %d on %d nodes: %w", e, p+1, c.Nodes, err)
			}
			out = append(out, r)
			if done != nil {
				done(r)
			}
		}
	}
	return out, nil
}

// Summary is the medians of one engine's runs at one cluster size, and, against the
// reference engine, the median of the pairwise ratios.
type Summary struct {
	Engine             string  `json:"engine"`
	Nodes              int     `json:"nodes"`
	Runs               int     `json:"runs"`
	RecordsPerSec      float64 `json:"records_per_s"`
	NodeCPUPerRecordUs float64 `json:"node_cpu_per_record_us"`
	LagAtAppendEnd     uint64  `json:"lag_at_append_end"`
	// SpeedVsRef is the median over pairs of this engine's records/s over the reference
	// engine's in the same pair; CPUVsRef the same of CPU per record (1 for the reference).
	SpeedVsRef float64 `json:"speed_vs_ref"`
	CPUVsRef   float64 `json:"cpu_vs_ref"`
}

// Summarize groups results by cluster size and engine, in the order they came, pairing
// the i-th run of each engine with the i-th run of ref at the same size.
func Summarize(results []Result, ref string) []Summary {
	type group struct {
		engine string
		nodes  int
	}
	var order []group
	by := map[group][]Result{}
	for _, r := range results {
		g := group{r.Engine, r.Nodes}
		if _, ok := by[g]; !ok {
			order = append(order, g)
		}
		by[g] = append(by[g], r)
	}
	var out []Summary
	for _, g := range order {
		rs := by[g]
		refs := by[group{ref, g.nodes}]
		s := Summary{Engine: g.engine, Nodes: g.nodes, Runs: len(rs)}
		var speed, cpu, lag, sr, cr []float64
		for i, r := range rs {
			speed = append(speed, r.RecordsPerSec)
			cpu = append(cpu, r.NodeCPUPerRecordUs)
			lag = append(lag, float64(r.LagAtAppendEnd))
			if i < len(refs) && refs[i].RecordsPerSec > 0 && refs[i].NodeCPUPerRecordUs > 0 {
				sr = append(sr, r.RecordsPerSec/refs[i].RecordsPerSec)
				cr = append(cr, r.NodeCPUPerRecordUs/refs[i].NodeCPUPerRecordUs)
			}
		}
		s.RecordsPerSec, s.NodeCPUPerRecordUs, s.LagAtAppendEnd = median(speed), median(cpu), uint64(median(lag))
		s.SpeedVsRef, s.CPUVsRef = median(sr), median(cr)
		out = append(out, s)
	}
	return out
}

// median returns the median of xs (the mean of the middle two for an even count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}
