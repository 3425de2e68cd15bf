package runner

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

// ErrConfig is wrapped by every error about a config file (--config).
var ErrConfig = errors.New("config file")

// The config file is read by this hand-written code rather than urfave/cli's altsrc
// (v2.27.7), which silently ignores keys that are not altsrc-wrapped flags (a typo, or
// `help: true`, would pass), fetches http(s) URLs given as the file name, flattens its
// errors with %v (errors.Is cannot find os.ErrNotExist), refuses a null value for a string
// flag and a comma-separated string for a list flag, and needs every flag wrapped. Reading
// the file here and handing each value to the flag's own parser through c.Set gives the
// file exactly the command line's syntax and parse errors.

// applyConfigFile sets every flag of flags that was not given on the command line from
// the config file at path. The file is YAML (.yaml, .yml) or TOML (.toml): a flat map
// whose keys are the names of flags (without dashes: "id", "cluster-id", "join", ...)
// and whose values are strings, numbers or booleans, or for a list flag (a
// cli.StringSliceFlag: "join", "bootstrap") a list of them or one comma-separated string.
// A null value is the empty string for a scalar flag and the empty list for a list flag.
// Every key must name one of flags, so a typo, "help" or "config" is an error; flags
// should be the command's declared flags, not c.Command.Flags (which holds cli's help
// flag). Every error wraps ErrConfig and names the file, the key and the problem.
// docs/operations.md lists the keys.
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
			return fmt.Errorf("%w %s: unknown key %q: not a node setting; the keys are %s", ErrConfig, path, k, strings.Join(names, ", "))
		}
		if c.IsSet(k) {
			continue // the command line wins
		}
		_, list := f.(*cli.StringSliceFlag)
		vals, err := configValues(raw[k], list)
		if err != nil {
			return fmt.Errorf("%w %s: key %q: %w", ErrConfig, path, k, err)
		}
		for _, v := range vals {
			if err := c.Set(k, v); err != nil {
				return fmt.Errorf("%w %s: key %q: invalid value %q%s: %w", ErrConfig, path, k, v, wantOf(f), err)
			}
		}
	}
	return nil
}

// readConfigFile decodes the file at path, by its extension, into a map of keys to values.
func readConfigFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	raw := map[string]any{}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		err = yaml.Unmarshal(data, &raw)
	case ".toml":
		err = toml.Unmarshal(data, &raw)
	default:
		return nil, fmt.Errorf("%w %s: unknown extension %q; use .yaml, .yml or .toml", ErrConfig, path, ext)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrConfig, path, err)
	}
	return raw, nil
}

// configValues renders a decoded value as the values to give a flag: one for a scalar
// (null gives ""), and for a list flag one per element of a list (null gives none).
func configValues(v any, list bool) ([]string, error) {
	elems, isList := v.([]any)
	switch {
	case isList && !list:
		return nil, fmt.Errorf("a list of %d values; want a single value", len(elems))
	case !isList && list && v == nil:
		return nil, nil
	case !isList:
		s, err := configScalar(v)
		if err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		s, err := configScalar(e)
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
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

// wantOf describes the values a flag accepts, for errors.
func wantOf(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag:
		return " (want an integer)"
	case *cli.UintFlag, *cli.Uint64Flag:
		return " (want a non-negative integer)"
	case *cli.BoolFlag:
		return " (want true or false)"
	case *cli.DurationFlag:
		return " (want a duration such as 500ms)"
	}
	return ""
}
