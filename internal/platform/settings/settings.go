// Package settings is the one way our binaries read their settings, each
// with its own settings struct: the struct's tags are the one list (the
// environment variable and YAML key, the flag, the help, secret or not);
// values come from, in rising precedence, the defaults, a YAML file
// (--config), the environment and the flags; a secret also from
// <NAME>_FILE; every value is taken as written, and every problem reported
// at once. The receiver (internal/receiver/config) and the fetcher
// (internal/fetcher/fetchconfig) use it with their own struct.
package settings

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// Setting is one field of a settings struct as the loader, --help and the
// docs see it.
type Setting struct {
	Name   string // the environment variable and YAML key: RECEIVER_ADDR
	Flag   string // "addr"; "" for secrets
	Help   string
	Secret bool  // masked; also read from <Name>_FILE
	index  []int // the field's index in T, through the groups embedded
	typ    reflect.Type
}

// Schema is the settings of one struct type T: its fields, read from the
// tags once, and its defaults.
type Schema[T any] struct {
	defaults func() T
	list     []Setting
	byName   map[string]Setting
	byFlag   map[string]Setting
}

// New reads T's fields: each is a setting with the tags koanf (its name),
// flag ("" for none; never for a secret), help and secret ("true"). T's
// fields are strings, ints, int64 sizes, durations and booleans, or
// embedded structs of such fields without a koanf tag: a group of settings
// several binaries share, declared once (the NATS connection, the catalogue
// login, the log), whose settings are T's as if written in T at the place
// of the embedding. A name or a flag declared twice is a mistake of the
// program: New panics.
func New[T any](defaults func() T, opts ...Option) *Schema[T] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Schema[T]{defaults: defaults, byName: map[string]Setting{}, byFlag: map[string]Setting{}}
	var walk func(t reflect.Type, at []int)
	walk = func(t reflect.Type, at []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(slices.Clone(at), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct && f.Tag.Get("koanf") == "" {
				walk(f.Type, index)
				continue
			}
			set := Setting{Name: f.Tag.Get("koanf"), Flag: f.Tag.Get("flag"), Help: f.Tag.Get("help"),
				Secret: f.Tag.Get("secret") == "true", index: index, typ: f.Type}
			if flag, ok := o.flags[set.Name]; ok {
				set.Flag = flag
				delete(o.flags, set.Name)
			}
			if _, dup := s.byName[set.Name]; dup {
				panic(fmt.Sprintf("settings: %s is declared twice in %s", set.Name, reflect.TypeFor[T]()))
			}
			if other, dup := s.byFlag[set.Flag]; dup && set.Flag != "" {
				panic(fmt.Sprintf("settings: --%s is the flag of both %s and %s in %s", set.Flag, other.Name, set.Name, reflect.TypeFor[T]()))
			}
			s.list = append(s.list, set)
			s.byName[set.Name] = set
			if set.Flag != "" {
				s.byFlag[set.Flag] = set
			}
		}
	}
	walk(reflect.TypeFor[T](), nil)
	for name := range o.flags {
		panic(fmt.Sprintf("settings: a flag for %s, which %s does not have", name, reflect.TypeFor[T]()))
	}
	return s
}

// Option is a choice of the binary's about its settings.
type Option func(*options)

type options struct{ flags map[string]string }

// Flag names the flag of the setting name in this binary, over its tag:
// a group of settings declares one flag for every binary, and a binary
// whose flags drop its own prefix renames it (the fetcher's --consumer,
// FETCH_CONSUMER, is --fetch-consumer in the receiver).
func Flag(name, flag string) Option {
	return func(o *options) {
		if o.flags == nil {
			o.flags = map[string]string{}
		}
		o.flags[name] = flag
	}
}

// Settings lists every setting, in the order of T's fields.
func (s *Schema[T]) Settings() []Setting { return slices.Clone(s.list) }

// Lookup is the setting of that name.
func (s *Schema[T]) Lookup(name string) (Setting, bool) {
	set, ok := s.byName[name]
	return set, ok
}

// Known reports whether name is one of the settings, or the _FILE of a
// secret: a variable the binary reads.
func (s *Schema[T]) Known(name string) bool {
	if _, ok := s.byName[name]; ok {
		return true
	}
	base, ok := strings.CutSuffix(name, "_FILE")
	return ok && s.byName[base].Secret
}

// Value is the setting's value in c (a T), as text (secrets unmasked:
// callers that print it mask them).
func (s Setting) Value(c any) string {
	v := reflect.ValueOf(c).FieldByIndex(s.index)
	switch x := v.Interface().(type) {
	case time.Duration:
		return x.String()
	case int64: // a size: in the largest binary unit that divides it
		for _, u := range []struct {
			suffix string
			n      int64
		}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if x != 0 && x%u.n == 0 {
				return strconv.FormatInt(x/u.n, 10) + u.suffix
			}
		}
	}
	return fmt.Sprint(v.Interface())
}

func (s Setting) kind() reflect.Type { return s.typ }

// Unknown is a variable of the environment under a binary's prefixes
// that none of the project's binaries reads, with the known name it most
// resembles ("" when none is close): a typo the environment, unlike a
// YAML file, cannot refuse.
type Unknown struct {
	Name    string
	Suggest string
}

// Sources are where Load reads, in rising precedence.
type Sources struct {
	// File is a YAML file of settings (--config); "" for none.
	File string
	// Getenv reads the environment (os.Getenv outside tests).
	Getenv func(string) string
	// Flags holds the parsed command line, with the flags of BindFlags;
	// only flags given on it count. nil for none.
	Flags *pflag.FlagSet
}

// Load builds the configuration from, in rising precedence: the defaults,
// the YAML file, the environment and the flags (koanf merges the layers).
// Every value is taken exactly as written: the YAML file's scalars as their
// text, never as YAML numbers or booleans; an empty value is no value (the
// layer below, or the default, stays). A secret is also read from
// <NAME>_FILE, in the YAML file as in the environment, without the file's
// trailing newline. Errors name the setting and where it came from, never a
// secret's value; every one is reported at once. Load does not validate.
func (s *Schema[T]) Load(src Sources) (T, error) {
	c := s.defaults()
	if src.Getenv == nil {
		src.Getenv = func(string) string { return "" }
	}
	k := koanf.New(".") // no setting's name holds a dot
	var errs []error
	load := func(source string, values map[string]string) {
		m := map[string]any{}
		for name, v := range values {
			set, _ := s.Lookup(name)
			if _, err := parse(set.kind(), v); err != nil {
				shown := strconv.Quote(v)
				if set.Secret {
					shown = "(hidden)"
				}
				errs = append(errs, fmt.Errorf("%s (%s): cannot parse %s: want %s", name, source, shown, kindWord(set.kind())))
				continue
			}
			m[name] = v
		}
		if err := k.Load(confmap.Provider(m, "."), nil); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", source, err))
		}
	}
	if src.File != "" {
		values, err := s.readFile(src.File)
		errs = append(errs, err)
		load("config file "+src.File, values)
	}
	values, err := s.readEnv(src.Getenv)
	errs = append(errs, err)
	load("environment", values)
	if src.Flags != nil {
		// Only the flags given (the provider skips the others); each by
		// its setting's name, as the text written.
		m, err := posflag.ProviderWithFlag(src.Flags, ".", nil, func(f *pflag.Flag) (string, any) {
			set, ok := s.byFlag[f.Name]
			if !ok || f.Value.String() == "" {
				return "", nil
			}
			return set.Name, f.Value.String()
		}).Read()
		if err != nil {
			errs = append(errs, fmt.Errorf("flags: %w", err))
		}
		flags := map[string]string{}
		for name, v := range m {
			flags[name] = v.(string)
		}
		load("flags", flags)
	}
	if err := errors.Join(errs...); err != nil {
		return c, err
	}
	err = k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		DecodeHook: func(from, to reflect.Type, data any) (any, error) {
			if s, ok := data.(string); ok && from.Kind() == reflect.String {
				return parse(to, s)
			}
			return data, nil
		},
		TagName: "koanf",
		Squash:  true, // the groups embedded: their settings are T's
	}})
	return c, err
}

// BindFlags adds a flag to fs for every setting that has one. Booleans are
// boolean flags (--pprof alone is true); the others take a value. The
// flags' own defaults are empty: only a flag given on the command line
// counts, over the environment and the file.
func (s *Schema[T]) BindFlags(fs *pflag.FlagSet) {
	def := s.defaults()
	for _, set := range s.list {
		if set.Flag == "" {
			continue
		}
		help := set.Help + " (" + set.Name
		if v := set.Value(def); v != "" && v != "0" && v != "0s" {
			help += ", default " + v
		}
		help += ")"
		if set.kind().Kind() == reflect.Bool {
			fs.Bool(set.Flag, false, help)
			continue
		}
		fs.Var(&textFlag{typ: flagType(set.kind())}, set.Flag, help)
	}
}

// textFlag keeps a flag's text as written (Load parses it, with the same
// rules as the file's and the environment's); its type names what it takes
// in --help.
type textFlag struct{ v, typ string }

func (f *textFlag) String() string     { return f.v }
func (f *textFlag) Set(v string) error { f.v = v; return nil }
func (f *textFlag) Type() string       { return f.typ }

func flagType(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "duration"
	case t.Kind() == reflect.Int:
		return "int"
	case t.Kind() == reflect.Int64:
		return "bytes"
	}
	return "string"
}

// readEnv reads every setting, and <NAME>_FILE of the secrets, from the
// environment.
func (s *Schema[T]) readEnv(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, set := range s.list {
		v := getenv(set.Name)
		if set.Secret {
			var err error
			if v, err = secret(set.Name, v, getenv(set.Name+"_FILE"), "environment"); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if v != "" {
			out[set.Name] = v
		}
	}
	return out, errors.Join(errs...)
}

// secret is the value of a secret given as value or in the file named by
// file (one of them); the file's trailing newline is not part of it, as
// mounted Kubernetes Secrets and `echo > file` end with one.
func secret(name, value, file, source string) (string, error) {
	switch {
	case file == "":
		return value, nil
	case value != "":
		return "", fmt.Errorf("%s and %s_FILE are both set (%s): set one", name, name, source)
	}
	v, err := ReadSecretFile(file)
	if err != nil {
		return "", fmt.Errorf("%s_FILE (%s): %w", name, source, err)
	}
	return v, nil
}

// ReadSecretFile reads a secret from a file, as every *_FILE and every
// --*-file flag of the project reads it: the content exactly, less its
// trailing newline.
func ReadSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// readFile reads a YAML file of settings: a mapping of names (the
// environment's, in any case) to single values, each taken as the text
// written, so that 0x1F2E3D4C5B6A, 012 or 1e3 stay what they say. An empty
// or null value is no value.
func (s *Schema[T]) readFile(path string) (map[string]string, error) {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return out, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return out, nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return out, fmt.Errorf("config file %s: want a mapping of setting names to values", path)
	}
	var errs []error
	raw := map[string]string{}
	files := map[string]string{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		name := strings.ToUpper(key.Value)
		at := fmt.Sprintf("config file %s line %d", path, key.Line)
		if val.Kind == yaml.AliasNode {
			val = val.Alias
		}
		if val.Kind != yaml.ScalarNode {
			errs = append(errs, fmt.Errorf("%s: %s must be a single value", at, key.Value))
			continue
		}
		v := val.Value
		if val.Tag == "!!null" {
			v = ""
		}
		target := raw
		if base, ok := strings.CutSuffix(name, "_FILE"); ok && s.byName[base].Secret {
			target, name = files, base
		} else if _, ok := s.byName[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: unknown setting %q", at, key.Value))
			continue
		}
		if _, dup := target[name]; dup {
			errs = append(errs, fmt.Errorf("%s: %s is given twice", at, key.Value))
			continue
		}
		target[name] = v
	}
	for name, v := range raw {
		if v != "" {
			out[name] = v
		}
	}
	for name, file := range files {
		if file == "" {
			continue
		}
		v, err := secret(name, raw[name], file, "config file "+path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if v != "" {
			out[name] = v
		}
	}
	return out, errors.Join(errs...)
}

// parse reads text into a value of type t: decimal integers (no octal or
// hexadecimal surprises), byte sizes with KiB/MiB/GiB (or KB/MB/GB),
// durations, booleans.
func parse(t reflect.Type, v string) (any, error) {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return time.ParseDuration(strings.TrimSpace(v))
	case t.Kind() == reflect.String:
		return v, nil
	case t.Kind() == reflect.Int:
		return strconv.Atoi(strings.TrimSpace(v))
	case t.Kind() == reflect.Int64:
		return parseSize(v)
	case t.Kind() == reflect.Bool:
		return strconv.ParseBool(strings.TrimSpace(v))
	}
	return nil, fmt.Errorf("unsupported setting type %s", t)
}

func kindWord(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "a duration such as 30s, 10m, 24h"
	case t.Kind() == reflect.Int:
		return "a whole number"
	case t.Kind() == reflect.Int64:
		return "a size in bytes, with KiB, MiB or GiB"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "text"
}

// parseSize reads a byte count with an optional KiB/MiB/GiB (or KB/MB/GB) suffix.
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSpace(strings.TrimSuffix(v, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}

// Table is the settings as a Markdown table (variable, flag, default,
// meaning), the one the docs hold between their markers; a test compares
// it with the docs.
func (s *Schema[T]) Table() string {
	var b strings.Builder
	b.WriteString("| Variable | Flag | Default | Meaning |\n|---|---|---|---|\n")
	def := s.defaults()
	for _, set := range s.list {
		name, flag := "`"+set.Name+"`", "—"
		if set.Secret {
			name += " / `_FILE`"
		} else if set.Flag != "" {
			flag = "`--" + set.Flag + "`"
		}
		v := set.Value(def)
		if v == "" || v == "0" || v == "0s" {
			v = "—"
		} else {
			v = "`" + v + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, flag, v, strings.ReplaceAll(set.Help, "|", "\\|"))
	}
	return b.String()
}

// SecretsHelp lists the secrets of list, a line each (name, help), as the
// binaries' --help shows them: secrets have no flag.
func SecretsHelp(list []Setting) string {
	width := 0
	for _, set := range list {
		if set.Secret {
			width = max(width, len(set.Name))
		}
	}
	var b strings.Builder
	for _, set := range list {
		if set.Secret {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, set.Name, set.Help)
		}
	}
	return b.String()
}
