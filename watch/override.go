package watch

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Override is a layer of settings over the config file, such as the
// command line's flags: Set names the fields of Config it sets, by their
// YAML keys ("link_rate"), and those take Config's values; every other
// field keeps the file's. Naming the keys, rather than taking non-zero
// values, lets an override set a field to its zero value
// (--cleanup-on-exit=false over a file's true).
type Override struct {
	Config Config
	Set    map[string]bool
}

// Apply sets the fields of c that o names to o's values. A name that is
// no key of Config is an error, and c is then left as it was.
func (o Override) Apply(c *Config) error {
	dst := reflect.ValueOf(c).Elem()
	src := reflect.ValueOf(o.Config)
	typ := dst.Type()
	fields := map[string]int{}
	for i := 0; i < typ.NumField(); i++ {
		key, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		fields[key] = i
	}
	var unknown []string
	for key, set := range o.Set {
		if _, ok := fields[key]; set && !ok {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("override: no config key %s", strings.Join(unknown, ", "))
	}
	for key, set := range o.Set {
		if set {
			dst.Field(fields[key]).Set(src.Field(fields[key]))
		}
	}
	return nil
}

// Load reads the config file at path over DefaultConfig (DefaultConfig
// alone when path is empty) and applies o on top: what the daemon starts
// with, and what it reloads.
func Load(path string, o Override) (Config, error) {
	cfg := DefaultConfig()
	if path != "" {
		var err error
		if cfg, err = LoadConfig(path); err != nil {
			return cfg, err
		}
	}
	if err := o.Apply(&cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}
