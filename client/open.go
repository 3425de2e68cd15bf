package client

import "context"

// Open returns a Client for the cluster of cfg.Addrs without contacting any node: it
// checks cfg and sets up the connection pool. Connections are dialed, the leader found
// and the session opened by the first request that needs them, so Open suits admin use
// against a cluster that may have no leader (Status, Cluster().Status), where Dial would
// wait for one. Dial is Open followed by opening the session. It returns an error
// wrapping ErrBadConfig for an invalid cfg. Close the Client when done.
func Open(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c := &Client{
		cfg:  cfg,
		log:  cfg.Logger,
		pool: map[string]*poolEntry{},
		free: make(chan struct{}, cfg.MaxInflight),

		distrust:   map[string]uint64{},
		rechecking: map[string]bool{},
		deposed:    make(chan struct{}),
		elected:    make(chan struct{}),
	}
	for _, a := range cfg.Addrs {
		c.learn(a)
	}
	c.leader = c.candidates[0]
	c.rotation = 1
	c.sess.init(cfg.MaxInflight)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.closing = c.ctx.Done()
	c.wg.Add(1)
	go c.watch()
	return c, nil
}
