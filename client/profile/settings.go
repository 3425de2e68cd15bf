package profile

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Settings are the connection settings of a command: one layer (flags, environment, a
// context, defaults) or the merge of them. A zero field is "not set".
type Settings struct {
	// Addrs are client addresses of the cluster's nodes (host:port); one that answers is
	// enough.
	Addrs []string `yaml:"addrs,omitempty" json:"addrs,omitempty"`
	// ClusterID makes the client refuse nodes of another cluster; empty: any.
	ClusterID string `yaml:"cluster_id,omitempty" json:"cluster_id,omitempty"`
	// CertsDir is the directory with ca.crt and client.USER.crt/.key.
	CertsDir string `yaml:"certs_dir,omitempty" json:"certs_dir,omitempty"`
	// User names the client certificate to present (client.USER.crt in CertsDir).
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// Insecure connects in plaintext, to nodes started with --insecure; it excludes CertsDir
	// in the same layer.
	Insecure bool `yaml:"insecure,omitempty" json:"insecure,omitempty"`
	// Timeout bounds a command (its requests and retries); 0: not set.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}

// The environment variables that give the settings of the command line's flags: the layer
// between the flags and the context (the CLI binds them to its flags).
const (
	EnvAddr      = "LOCKSTEP_ADDR"       // comma-separated client addresses
	EnvClusterID = "LOCKSTEP_CLUSTER_ID" // cluster id
	EnvCertsDir  = "LOCKSTEP_CERTS_DIR"  // certificates directory
	EnvUser      = "LOCKSTEP_USER"       // client certificate name
	EnvInsecure  = "LOCKSTEP_INSECURE"   // true/false, 1/0
	EnvTimeout   = "LOCKSTEP_TIMEOUT"    // a Go duration: 5s, 1m
	EnvContext   = "LOCKSTEP_CONTEXT"    // the context to use instead of the file's current one
	EnvConfig    = "LOCKSTEP_CONFIG"     // the contexts file
)

// Default values, the lowest layer (Defaults).
const (
	DefaultAddr    = "127.0.0.1:8001"
	DefaultUser    = "root"
	DefaultTimeout = 5 * time.Second
)

// Defaults returns the built-in settings: the default address, user and timeout; no
// certificates directory (a command must be given one, or Insecure).
func Defaults() Settings {
	return Settings{Addrs: []string{DefaultAddr}, User: DefaultUser, Timeout: DefaultTimeout}
}

// SplitAddrs splits a comma-separated address list, dropping empty items.
func SplitAddrs(v string) []string {
	var out []string
	for a := range strings.SplitSeq(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Check reports whether s is a valid layer: CertsDir and Insecure not both, no empty
// address, a non-negative timeout.
func (s Settings) Check() error {
	if s.Insecure && s.CertsDir != "" {
		return fmt.Errorf("%w: a certificates directory and insecure: give one of them", ErrConflict)
	}
	if slices.Contains(s.Addrs, "") {
		return fmt.Errorf("%w: an empty address", ErrBadSettings)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("%w: timeout %v: want a positive duration", ErrBadSettings, s.Timeout)
	}
	return nil
}

// Resolve merges layers, the first of highest precedence: each field comes from the
// first layer that sets it, and the security choice (CertsDir or Insecure) from the first
// layer that sets either. A layer that fails Check is an error.
func Resolve(layers ...Settings) (Settings, error) {
	var out Settings
	secured := false
	for i, l := range layers {
		if err := l.Check(); err != nil {
			return Settings{}, fmt.Errorf("layer %d: %w", i, err)
		}
		if out.Addrs == nil && len(l.Addrs) > 0 {
			out.Addrs = slices.Clone(l.Addrs)
		}
		if out.ClusterID == "" {
			out.ClusterID = l.ClusterID
		}
		if out.User == "" {
			out.User = l.User
		}
		if out.Timeout == 0 {
			out.Timeout = l.Timeout
		}
		if !secured && (l.CertsDir != "" || l.Insecure) {
			out.CertsDir, out.Insecure, secured = l.CertsDir, l.Insecure, true
		}
	}
	return out, nil
}

// Envs are the environment variables of the connection settings, the context to use and
// the contexts file.
var Envs = []string{EnvAddr, EnvClusterID, EnvCertsDir, EnvUser, EnvInsecure, EnvTimeout, EnvContext, EnvConfig}

// UnsetEmpty unsets each of Envs that is set but empty: an empty variable means unset, so
// it gives no setting and hides none of the context's (an empty LOCKSTEP_CERTS_DIR does
// not make the context's certificates directory unused). A program calls it before it
// reads its flags.
func UnsetEmpty() error {
	for _, k := range Envs {
		if v, ok := os.LookupEnv(k); ok && v == "" {
			if err := os.Unsetenv(k); err != nil {
				return err
			}
		}
	}
	return nil
}
