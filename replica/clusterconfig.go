package replica

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepdb/lockstep/internal/batch"
	"github.com/lockstepdb/lockstep/partition"
	"github.com/lockstepdb/lockstep/procedures/modules"
	"github.com/vmihailenco/msgpack/v5"
)

// The replicated cluster configuration (docs/operations.md, Cluster configuration): the
// settings that decide replicated results — session expiry and windows, result limits,
// processor budgets — so two replicas that used different values would diverge. They are
// replicated state like the users table: set by the first entry of the cluster (the
// bootstrapping leader's Config values, in batch.ClusterInfo.Settings), changed only by
// KindClusterConfig items, in log order, so every replica switches at the same log index;
// kept in snapshots and in the meta hash. A node's own Config values of these settings
// are only the initial values it proposes if it bootstraps a cluster.
//
// The configuration is a versioned record: Version counts its changes and Index is where
// the last one applied. New settings are new names (a binary that does not know a name a
// change sets refuses the change, alike on every replica of one binary).

// ErrBadClusterConfig is returned for a change of the cluster configuration that names an
// unknown setting, gives a value out of range or names a setting twice: nothing changes.
var ErrBadClusterConfig = errors.New("bad cluster configuration")

// ClusterConfig is the replicated cluster configuration: one record, the same on every
// replica at every log index.
type ClusterConfig struct {
	// Version counts the changes of the record: 1 for the values the cluster was created
	// with, one more for each change. 0 for a cluster created before the configuration
	// was replicated: its replicas run their own Config values until the first change.
	Version uint64 `msgpack:"v"`
	// Index is the log index of the entry that gave the record its current values.
	Index uint64 `msgpack:"i"`
	// SessionTTL is Config.SessionTTL: how long, in batch time, a session lives idle.
	SessionTTL time.Duration `msgpack:"session_ttl"`
	// SessionWindow is Config.SessionWindow.
	SessionWindow uint64 `msgpack:"session_window"`
	// MaxCachedResultBytes is Config.MaxCachedResultBytes.
	MaxCachedResultBytes int `msgpack:"max_cached_result_bytes"`
	// MaxSessions is Config.MaxSessions.
	MaxSessions int `msgpack:"max_sessions"`
	// MaxResultBytes is Config.MaxResultBytes.
	MaxResultBytes int `msgpack:"max_result_bytes"`
	// ProcessorBudget is Config.ProcessorBudget.
	ProcessorBudget int `msgpack:"processor_budget"`
	// ProcessorBudgetPerAppend is Config.ProcessorBudgetPerAppend; 0 turns the scaling off.
	ProcessorBudgetPerAppend int `msgpack:"processor_budget_per_append"`
	// Modules are the budgets of Starlark modules' calls (modules.Options: MaxSteps,
	// MaxElements, MaxValueBytes, MaxIntBits), from cluster version 4
	// (VersionModuleSettings); all 0 before, when modules run with modules' defaults.
	// modulesettings.go.
	Modules ModuleLimits `msgpack:"modules,omitempty"`
}

// setting describes one named setting of the ClusterConfig.
type setting struct {
	name     string
	duration bool // written and parsed as a Go duration ("2m"); else a decimal integer
	min, max int64
	// since is the cluster version that brought the setting (0: every version). Until the
	// cluster runs it the setting is 0, and a configuration whose value is 0 leaves it
	// out of its Settings, View and hash, as before the setting existed.
	since uint64
	get   func(*ClusterConfig) int64
	set   func(*ClusterConfig, int64)
}

// settings are the ClusterConfig's settings, by name. Append new ones; a name is written
// into the log forever.
var settings = []setting{
	{"max-cached-result-bytes", false, 1, 1 << 40, 0,
		func(c *ClusterConfig) int64 { return int64(c.MaxCachedResultBytes) },
		func(c *ClusterConfig, v int64) { c.MaxCachedResultBytes = int(v) }},
	{"max-result-bytes", false, 1, partition.MaxResultBytesLimit, 0,
		func(c *ClusterConfig) int64 { return int64(c.MaxResultBytes) },
		func(c *ClusterConfig, v int64) { c.MaxResultBytes = int(v) }},
	{"max-sessions", false, 1, 1 << 24, 0,
		func(c *ClusterConfig) int64 { return int64(c.MaxSessions) },
		func(c *ClusterConfig, v int64) { c.MaxSessions = int(v) }},
	{"processor-budget", false, 1, partition.MaxProcessorBudget, 0,
		func(c *ClusterConfig) int64 { return int64(c.ProcessorBudget) },
		func(c *ClusterConfig, v int64) { c.ProcessorBudget = int(v) }},
	{"processor-budget-per-append", false, 0, partition.MaxProcessorBudget, 0,
		func(c *ClusterConfig) int64 { return int64(c.ProcessorBudgetPerAppend) },
		func(c *ClusterConfig, v int64) { c.ProcessorBudgetPerAppend = int(v) }},
	{"session-ttl", true, int64(time.Second), int64(365 * 24 * time.Hour), 0,
		func(c *ClusterConfig) int64 { return int64(c.SessionTTL) },
		func(c *ClusterConfig, v int64) { c.SessionTTL = time.Duration(v) }},
	{"session-window", false, 1, 1 << 20, 0,
		func(c *ClusterConfig) int64 { return int64(c.SessionWindow) },
		func(c *ClusterConfig, v int64) { c.SessionWindow = uint64(v) }},
	// Module budgets (modulesettings.go), from cluster version 4.
	{"module-max-steps", false, minModuleSteps, modules.MaxMaxSteps, VersionModuleSettings,
		func(c *ClusterConfig) int64 { return int64(c.Modules.MaxSteps) },
		func(c *ClusterConfig, v int64) { c.Modules.MaxSteps = uint64(v) }},
	{"module-max-elements", false, 1, modules.MaxMaxElements, VersionModuleSettings,
		func(c *ClusterConfig) int64 { return int64(c.Modules.MaxElements) },
		func(c *ClusterConfig, v int64) { c.Modules.MaxElements = int(v) }},
	{"module-max-value-bytes", false, minModuleValueBytes, partition.MaxValueBytes, VersionModuleSettings,
		func(c *ClusterConfig) int64 { return int64(c.Modules.MaxValueBytes) },
		func(c *ClusterConfig, v int64) { c.Modules.MaxValueBytes = int(v) }},
	{"module-max-int-bits", false, 64, modules.MaxMaxIntBits, VersionModuleSettings,
		func(c *ClusterConfig) int64 { return int64(c.Modules.MaxIntBits) },
		func(c *ClusterConfig, v int64) { c.Modules.MaxIntBits = int(v) }},
}

func lookupSetting(name string) (*setting, bool) {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.name == name })
	if i < 0 {
		return nil, false
	}
	return &settings[i], true
}

// SettingNames returns the names of the cluster configuration's settings: those of
// every cluster version by name, then those later versions brought, in their order.
func SettingNames() []string { return settingNamesAt(MaxClusterVersion) }

// settingNamesAt returns the names of the settings a cluster at version v has.
func settingNamesAt(v uint64) []string {
	var out []string
	for _, s := range settings {
		if s.since <= v {
			out = append(out, s.name)
		}
	}
	return out
}

// ParseSetting parses the text value of the setting name — a Go duration ("90s") for
// session-ttl, a decimal integer for the others — and checks its range. It returns an
// error wrapping ErrBadClusterConfig for an unknown name, bad text or a value out of range.
func ParseSetting(name, text string) (batch.Setting, error) {
	s, ok := lookupSetting(name)
	if !ok {
		return batch.Setting{}, fmt.Errorf("%w: unknown setting %q (want one of %s)", ErrBadClusterConfig, name, strings.Join(SettingNames(), ", "))
	}
	var v int64
	var err error
	if s.duration {
		var d time.Duration
		d, err = time.ParseDuration(text)
		v = int64(d)
	} else {
		v, err = strconv.ParseInt(text, 10, 64)
	}
	if err != nil {
		return batch.Setting{}, fmt.Errorf("%w: %s: %q is not a %s", ErrBadClusterConfig, name, text, s.kind())
	}
	bs := batch.Setting{Name: name, Value: v}
	return bs, checkSetting(bs, MaxClusterVersion)
}

func (s *setting) kind() string {
	if s.duration {
		return "duration"
	}
	return "decimal integer"
}

func (s *setting) format(v int64) string {
	if s.duration {
		return time.Duration(v).String()
	}
	return strconv.FormatInt(v, 10)
}

// checkSetting returns an error wrapping ErrBadClusterConfig unless bs names a setting a
// cluster at version v has and its value is in range. A pure function: every replica
// decides alike, and a setting of a later version is unknown, as to a binary without it.
func checkSetting(bs batch.Setting, v uint64) error {
	s, ok := lookupSetting(bs.Name)
	if !ok || s.since > v {
		return fmt.Errorf("%w: unknown setting %q (want one of %s)", ErrBadClusterConfig, bs.Name, strings.Join(settingNamesAt(v), ", "))
	}
	if bs.Value < s.min || bs.Value > s.max {
		return fmt.Errorf("%w: %s %s not in %s..%s", ErrBadClusterConfig, bs.Name, s.format(bs.Value), s.format(s.min), s.format(s.max))
	}
	return nil
}

// withSettings returns c with set applied at cluster version v, or why set is refused (a
// bad setting, a name given twice, nothing to set); c is unchanged either way. A pure
// function.
func (c ClusterConfig) withSettings(set []batch.Setting, v uint64) (ClusterConfig, error) {
	seen := map[string]bool{}
	for _, bs := range set {
		if err := checkSetting(bs, v); err != nil {
			return c, err
		}
		if seen[bs.Name] {
			return c, fmt.Errorf("%w: %s given twice", ErrBadClusterConfig, bs.Name)
		}
		seen[bs.Name] = true
	}
	for _, bs := range set {
		s, _ := lookupSetting(bs.Name)
		s.set(&c, bs.Value)
	}
	return c, nil
}

// Settings returns every setting of c by name, in SettingNames order, but a setting of a
// later cluster version that c does not have (see setting.since).
func (c ClusterConfig) Settings() []batch.Setting {
	out := make([]batch.Setting, 0, len(settings))
	for i := range settings {
		if s := &settings[i]; s.has(&c) {
			out = append(out, batch.Setting{Name: s.name, Value: s.get(&c)})
		}
	}
	return out
}

// has reports whether c has the setting s: one of every version, or set.
func (s *setting) has(c *ClusterConfig) bool { return s.since == 0 || s.get(c) != 0 }

// ConfigSetting is one setting of a ConfigView.
type ConfigSetting struct {
	Name  string `msgpack:"name"`
	Value string `msgpack:"value"`
}

// ConfigView is the cluster configuration as a KindClusterConfig item answers it: its
// version, index and every setting as text (as ParseSetting reads it), by name. Its
// msgpack form is the wire protocol's ClusterConfigInfo.
type ConfigView struct {
	Version  uint64          `msgpack:"v"`
	Index    uint64          `msgpack:"i"`
	Settings []ConfigSetting `msgpack:"settings"`
	// ClusterVersion and Active: the deployment (versions.go), Active as "name@N".
	ClusterVersion uint64   `msgpack:"cv,omitempty"`
	Active         []string `msgpack:"active,omitempty"`
	// Modules are the active modules as "name@N" (N the module's version).
	Modules []string `msgpack:"mods,omitempty"`
}

// View returns c as text.
func (c ClusterConfig) View() ConfigView {
	v := ConfigView{Version: c.Version, Index: c.Index}
	for i := range settings {
		if s := &settings[i]; s.has(&c) {
			v.Settings = append(v.Settings, ConfigSetting{Name: s.name, Value: s.format(s.get(&c))})
		}
	}
	return v
}

// clusterConfigOf returns the configuration cfg's values give (Version 0: not replicated).
func clusterConfigOf(cfg Config) ClusterConfig {
	return ClusterConfig{
		SessionTTL:               cfg.SessionTTL,
		SessionWindow:            cfg.SessionWindow,
		MaxCachedResultBytes:     cfg.MaxCachedResultBytes,
		MaxSessions:              cfg.MaxSessions,
		MaxResultBytes:           cfg.MaxResultBytes,
		ProcessorBudget:          cfg.ProcessorBudget,
		ProcessorBudgetPerAppend: max(0, cfg.ProcessorBudgetPerAppend),
	}
}

// InitialSettings returns the settings a node configured with cfg proposes for a new
// cluster (batch.ClusterInfo.Settings), which starts at cfg.MaxClusterVersion: from
// VersionModuleSettings on, the module budgets too.
func InitialSettings(cfg Config) []batch.Setting {
	cfg = cfg.withDefaults()
	c := clusterConfigOf(cfg)
	if cfg.MaxClusterVersion >= VersionModuleSettings {
		c.Modules = moduleLimitsOf(cfg.ModuleLimits)
	}
	return c.Settings()
}

// ClusterConfig returns the cluster configuration as applied so far. Safe for concurrent
// use.
func (f *FSM) ClusterConfig() ClusterConfig { return *f.confView.Load() }

// useConfig makes c the configuration the FSM applies with, from the next item on. It
// runs on the apply goroutine, between engine executions.
func (f *FSM) useConfig(c ClusterConfig) {
	f.conf = c
	f.sess.cfg.SessionTTL, f.sess.cfg.MaxSessions = c.SessionTTL, c.MaxSessions
	if err := f.eng.SetMaxResultBytes(c.MaxResultBytes); err != nil {
		// Every value reaching here was checked (checkSetting, Config.Validate).
		panic(fmt.Sprintf("replica: invariant violated: cluster configuration %+v: %v", c, err))
	}
	f.confView.Store(&c)
}

// initConfig applies the configuration of a cluster's first entry at index: the compiled
// defaults with info's settings over them. A cluster created before the configuration was
// replicated (no settings) keeps the node's values, at Version 0. A bad setting is
// skipped, alike on every replica, and logged.
func (f *FSM) initConfig(index uint64, info *batch.ClusterInfo) {
	if info.Settings == nil {
		return
	}
	c := clusterConfigOf(DefaultConfig())
	for _, bs := range info.Settings {
		next, err := c.withSettings([]batch.Setting{bs}, info.ClusterVersion)
		if err != nil {
			f.log.Error("cluster's initial setting skipped", "index", index, "err", err)
			continue
		}
		c = next
	}
	c.Version, c.Index = 1, index
	f.useConfig(c)
}

// configCommand applies one KindClusterConfig item at index: it changes the configuration
// or refuses the command and changes nothing. The value is the configuration after the
// command, a ConfigView, encoded.
func (f *FSM) configCommand(index uint64, payload []byte) ([]byte, error) {
	var c batch.ConfigChange
	if err := msgpack.Unmarshal(payload, &c); err != nil {
		return nil, fmt.Errorf("%w: cluster configuration payload: %w", ErrBadClusterConfig, err)
	}
	switch c.Cmd {
	case "get":
	case "set":
		if len(c.Set) == 0 {
			return nil, fmt.Errorf("%w: set names no setting", ErrBadClusterConfig)
		}
		next, err := f.conf.withSettings(c.Set, f.dep.Effective())
		if err != nil {
			return nil, err
		}
		if next.Modules != f.conf.Modules {
			// Every module compiles again under the new budgets, or nothing changes.
			if err := f.setModuleLimits(index, next); err != nil {
				return nil, err
			}
			break
		}
		// The inputs before the change in this entry run with the old values.
		f.flush()
		next.Version, next.Index = f.conf.Version+1, index
		f.useConfig(next)
	case "upgrade":
		if err := f.upgrade(index, &c); err != nil {
			return nil, err
		}
	case "activate":
		if err := f.activate(index, &c); err != nil {
			return nil, err
		}
	case "deploy-module":
		if err := f.deployModule(index, &c); err != nil {
			return nil, err
		}
	case "remove-module":
		if err := f.removeModule(index, &c); err != nil {
			return nil, err
		}
	case "remove-modules":
		if err := f.removeModules(index, &c); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown command %q", ErrBadClusterConfig, c.Cmd)
	}
	view := f.conf.View()
	view.ClusterVersion = f.dep.Version
	for _, g := range f.dep.Active {
		view.Active = append(view.Active, g.Key())
	}
	for i := range f.dep.Modules {
		if m := &f.dep.Modules[i]; m.Active() {
			view.Modules = append(view.Modules, fmt.Sprintf("%s@%d", m.Name, m.Current().Version))
		}
	}
	v, err := msgpack.Marshal(view)
	if err != nil {
		return nil, fmt.Errorf("cluster configuration: %w", err)
	}
	return v, nil
}

// hash feeds the configuration to the meta hash. A configuration never replicated
// (Version 0) adds nothing, so such a cluster hashes as before it existed.
func (c *ClusterConfig) hash(u func(uint64), str func(string)) {
	if c.Version == 0 {
		return
	}
	str("config")
	u(c.Version)
	u(c.Index)
	for _, bs := range c.Settings() {
		str(bs.Name)
		u(uint64(bs.Value))
	}
}

// check returns an error wrapping ErrBadClusterConfig unless every setting of c is in range
// (a configuration read from a snapshot).
func (c *ClusterConfig) check() error {
	for _, bs := range c.Settings() {
		if err := checkSetting(bs, MaxClusterVersion); err != nil {
			return err
		}
	}
	return nil
}
