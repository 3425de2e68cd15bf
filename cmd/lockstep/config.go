package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// errConfig is wrapped by every error about a config file.
var errConfig = errors.New("config file")

// applyConfigFile sets every flag of flags that was not given on the command line from
// the config file at path. The file is YAML (.yaml, .yml) or TOML (.toml): a flat map
// whose keys are the flags' names without dashes ("id", "cluster-id", "join", ...) and
// whose values are strings, numbers, booleans or lists (for "join" and "bootstrap").
// An unknown key is an error, so a typo cannot pass silently. docs/operations.md lists
// the keys.
func applyConfigFile(c *cli.Context, flags []cli.Flag, path string) error {
	raw, err := readConfigFile(path)
	if err != nil {
		return err
	}
	known := map[string]cli.Flag{}
	var names []string
	for _, f := range flags {
		name := f.Names()[0]
		if name == "config" {
			continue
		}
		known[name] = f
		names = append(names, name)
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f, ok := known[k]
		if !ok {
			return fmt.Errorf("%w %s: unknown key %q; the keys are %s", errConfig, path, k, strings.Join(names, ", "))
		}
		if c.IsSet(k) {
			continue // the command line wins
		}
		vals, err := configValues(raw[k])
		if err != nil {
			return fmt.Errorf("%w %s: key %q: %w", errConfig, path, k, err)
		}
		if _, slice := f.(*cli.StringSliceFlag); !slice {
			vals = []string{strings.Join(vals, ",")}
		}
		for _, v := range vals {
			if err := c.Set(k, v); err != nil {
				return fmt.Errorf("%w %s: key %q: %w", errConfig, path, k, err)
			}
		}
	}
	return nil
}

// readConfigFile decodes the file at path, by its extension, into a map of keys to values.
func readConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errConfig, err)
	}
	raw := map[string]any{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		err = yaml.Unmarshal(data, &raw)
	case ".toml":
		err = toml.Unmarshal(data, &raw)
	default:
		return nil, fmt.Errorf("%w %s: unknown extension %q; use .yaml, .yml or .toml", errConfig, path, ext)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", errConfig, path, err)
	}
	return raw, nil
}

// configValues renders a decoded value as flag values: one for a scalar, one per element
// for a list. A null value gives one empty value (e.g. `admin:` disables the admin server).
func configValues(v any) ([]string, error) {
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, e := range list {
			s, err := configScalar(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := configScalar(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func configScalar(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("value of type %T; want a string, number, boolean or a list of them", v)
}
