package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/lockstepdb/lockstep/client"
	"github.com/lockstepdb/lockstep/procedures/builtin"
)

// ErrUnknownWorkload is returned by NewWorkload for a name it does not know.
var ErrUnknownWorkload = errors.New("loadgen: unknown workload")

// ClientOp is one request of a Lockstep workload, made with the client c.
type ClientOp func(ctx context.Context, c *client.Client, worker int, rng *rand.Rand) error

// Workload is a Lockstep workload: what it needs in the cluster first and the request
// each worker makes.
type Workload struct {
	// Name is the workload's name (see WorkloadNames).
	Name string
	// Setup prepares the cluster (a contest, accounts, a stream) through c; it may run
	// again on a cluster it prepared before. Nil when there is nothing to prepare.
	Setup func(ctx context.Context, c *client.Client) error
	// Op is the request.
	Op ClientOp
}

// On returns the workload's request as an Op that spreads the workers over clients:
// worker w uses clients[w % len(clients)].
func (w Workload) On(clients []*client.Client) Op {
	return func(ctx context.Context, worker int, rng *rand.Rand) error {
		return w.Op(ctx, clients[worker%len(clients)], worker, rng)
	}
}

// KV mixes, YCSB's core workloads by their share of reads (the rest are puts).
const (
	MixA     = "a"     // 50% reads, 50% updates
	MixB     = "b"     // 95% reads
	MixC     = "c"     // reads only
	MixWrite = "write" // puts only (not a YCSB mix)
)

var mixReads = map[string]float64{MixA: 0.5, MixB: 0.95, MixC: 1, MixWrite: 0}

// WorkloadConfig parametrizes the workloads; zero fields take their defaults.
type WorkloadConfig struct {
	// Keys is the number of keys (counters, kv keys, accounts, stream record keys). Default 1000.
	Keys int
	// Distribution is how keys are picked: Uniform (default) or Zipfian.
	Distribution string
	// ValueSize is the bytes of each kv value and stream record. Default 100.
	ValueSize int
	// Mix is the kv workload's mix: MixA (default), MixB, MixC or MixWrite.
	Mix string
	// Consistency is the level of kv reads. Default client.ReadLinearizable.
	Consistency client.Consistency
	// Stream is the append workload's stream, created with a retention of 100,000
	// records per partition if it does not exist. Default "bench".
	Stream string
}

// workloads are the constructors by name.
var workloads = map[string]func(cfg WorkloadConfig, keys *KeyChooser) Workload{
	"counter":  counterWorkload,
	"kv":       kvWorkload,
	"voter":    voterWorkload,
	"transfer": transferWorkload,
	"append":   appendWorkload,
}

// WorkloadNames returns the workloads' names, sorted.
func WorkloadNames() []string {
	var names []string
	for n := range workloads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewWorkload returns the workload name with cfg: counter (counter.add of 1), kv (YCSB
// mixes of kv.get and kv.put), voter (VoltDB's Voter: voter.vote), transfer (bank.transfer
// of 1 between two accounts, a multi-partition input) or append (stream.append).
func NewWorkload(name string, cfg WorkloadConfig) (Workload, error) {
	mk, ok := workloads[name]
	if !ok {
		return Workload{}, fmt.Errorf("%w %q: want one of %s", ErrUnknownWorkload, name, strings.Join(WorkloadNames(), ", "))
	}
	if cfg.Keys == 0 {
		cfg.Keys = 1000
	}
	if cfg.ValueSize == 0 {
		cfg.ValueSize = 100
	}
	if cfg.Mix == "" {
		cfg.Mix = MixA
	}
	if cfg.Stream == "" {
		cfg.Stream = "bench"
	}
	switch {
	case cfg.ValueSize < 0:
		return Workload{}, fmt.Errorf("%w: value size %d: want a positive number of bytes", ErrBadConfig, cfg.ValueSize)
	case cfg.Consistency != client.ReadLinearizable && cfg.Consistency != client.ReadAny:
		return Workload{}, fmt.Errorf("%w: consistency %d: unknown level", ErrBadConfig, cfg.Consistency)
	case name == "transfer" && cfg.Keys < 2:
		return Workload{}, fmt.Errorf("%w: transfer needs at least 2 keys (accounts), got %d", ErrBadConfig, cfg.Keys)
	}
	if _, ok := mixReads[cfg.Mix]; !ok {
		return Workload{}, fmt.Errorf("%w: kv mix %q: want a, b, c or write", ErrBadConfig, cfg.Mix)
	}
	keys, err := NewKeyChooser(cfg.Keys, cfg.Distribution)
	if err != nil {
		return Workload{}, err
	}
	w := mk(cfg, keys)
	w.Name = name
	return w, nil
}

func counterWorkload(_ WorkloadConfig, keys *KeyChooser) Workload {
	return Workload{Op: func(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
		_, err := c.CounterAdd(ctx, Key("c", keys.Next(rng)), 1)
		return err
	}}
}

func kvWorkload(cfg WorkloadConfig, keys *KeyChooser) Workload {
	reads := mixReads[cfg.Mix]
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	return Workload{Op: func(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
		key := Key("user", keys.Next(rng))
		if reads == 1 || (reads > 0 && rng.Float64() < reads) {
			_, err := client.QueryAs[builtin.KVGetResult](ctx, c, builtin.KVGet, []byte(key), builtin.NoArgs{}, cfg.Consistency)
			return err
		}
		_, err := c.KVPut(ctx, []byte(key), value)
		return err
	}}
}

// Voter's contest, as VoltDB's benchmark runs it.
var voterContestants = []string{"Edwina Burnam", "Tabatha Gehling", "Kelly Clauss", "Jessie Alloway", "Alana Bregman", "Jessie Eichman"}

// The voter workload's contest: votes come from VoterPhones phones (10-digit numbers
// from 2000000000), each allowed VoterMaxVotesPerPhone votes.
const (
	VoterPhones           = 1000000
	VoterMaxVotesPerPhone = 10
)

// VoterInit sets up the Voter contest the voter workload votes in, unless it exists.
func VoterInit(ctx context.Context, c *client.Client) error {
	_, err := c.VoterInit(ctx, voterContestants, VoterMaxVotesPerPhone)
	if errors.Is(err, client.ErrProcedure) {
		return nil // initialised before
	}
	return err
}

// Vote casts one vote from a random phone of a million for one of the six contestants,
// as VoltDB's Voter benchmark does; run VoterInit first. A vote the contest refuses (a
// phone over its limit) is a result, not an error.
func Vote(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
	_, err := CastVote(ctx, c, rng)
	return err
}

// CastVote is Vote returning the contest's answer, for callers that count the votes
// accepted (the demo's exactly-once check).
func CastVote(ctx context.Context, c *client.Client, rng *rand.Rand) (builtin.VoteResult, error) {
	return c.Vote(ctx, 2000000000+rng.Int64N(VoterPhones), int32(1+rng.IntN(len(voterContestants))))
}

func voterWorkload(WorkloadConfig, *KeyChooser) Workload {
	return Workload{Setup: VoterInit, Op: Vote}
}

// transferBalance is each account's opening balance: enough that transfers of 1 never
// run an account dry.
const transferBalance = 1 << 40

func transferWorkload(cfg WorkloadConfig, keys *KeyChooser) Workload {
	setup := func(ctx context.Context, c *client.Client) error {
		var wg sync.WaitGroup
		errs := make(chan error, cfg.Keys)
		sem := make(chan struct{}, 64)
		for i := range cfg.Keys {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if _, err := c.BankOpen(ctx, Key("acct", i), transferBalance); err != nil && !errors.Is(err, client.ErrProcedure) {
					errs <- fmt.Errorf("opening account %d: %w", i, err) // ErrProcedure: opened before
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	return Workload{Setup: setup, Op: func(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
		from := keys.Next(rng)
		to := keys.Next(rng)
		for to == from {
			to = rng.IntN(cfg.Keys)
		}
		_, err := c.BankTransfer(ctx, Key("acct", from), Key("acct", to), 1)
		return err
	}}
}

func appendWorkload(cfg WorkloadConfig, keys *KeyChooser) Workload {
	value := make([]byte, cfg.ValueSize)
	setup := func(ctx context.Context, c *client.Client) error {
		err := c.Streams().Create(ctx, builtin.StreamDefinition{Name: cfg.Stream, Retention: builtin.StreamRetention{MaxRecords: 100000}})
		if errors.Is(err, client.ErrStreamExists) {
			return nil
		}
		return err
	}
	return Workload{Setup: setup, Op: func(ctx context.Context, c *client.Client, _ int, rng *rand.Rand) error {
		_, err := c.Append(ctx, cfg.Stream, []byte(Key("k", keys.Next(rng))), value)
		return err
	}}
}

// ErrorType names a Lockstep client error for Result.ErrorTypes: the node's error code
// ("Overloaded", "ProcedureError", ...), or RetriesExhausted, Timeout, Canceled, Closed,
// or Other.
func ErrorType(err error) string {
	var ce *client.Error
	switch {
	case errors.As(err, &ce):
		return ce.Code.String()
	case errors.Is(err, client.ErrRetriesExhausted):
		return "RetriesExhausted"
	case errors.Is(err, context.DeadlineExceeded):
		return "Timeout"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	case errors.Is(err, client.ErrClosed):
		return "Closed"
	}
	return "Other"
}

// Dial connects n clients to the cluster of cfg, each with its own connections and
// session. On error it closes those it opened.
func Dial(ctx context.Context, cfg client.Config, n int) ([]*client.Client, error) {
	clients := make([]*client.Client, 0, n)
	for range n {
		c, err := client.Dial(ctx, cfg)
		if err != nil {
			Close(clients)
			return nil, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// Close closes clients.
func Close(clients []*client.Client) {
	for _, c := range clients {
		c.Close()
	}
}
