package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// choiceValue is a string flag that takes one of a fixed set of values (or,
// with list, a comma-separated list of them). A value outside the set is
// refused while the command line is parsed, so the mistake is a usage
// mistake found before anything runs; the set also gives the completion of
// the flag's value.
type choiceValue struct {
	p       *string
	choices []string
	list    bool
}

// choiceVar defines flag name on fs, storing into p, starting at def.
func choiceVar(fs *flag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	fs.Var(&choiceValue{p: p, choices: choices}, name, usage)
}

// choiceListVar is choiceVar for a comma-separated list of choices.
func choiceListVar(fs *flag.FlagSet, p *string, name, def string, choices []string, usage string) {
	*p = def
	fs.Var(&choiceValue{p: p, choices: choices, list: true}, name, usage)
}

// outputFormats are the values of --output.
var outputFormats = []string{"text", "json"}

// outputVar defines --output (-o): text, the default, or json. what, when
// not empty, says what json prints ("one verdict per line").
func outputVar(fs *flag.FlagSet, p *string, what string) {
	usage := "output format: text or json"
	if what != "" {
		usage = "output format: text, or json (" + what + ")"
	}
	choiceVar(fs, p, "output", "text", outputFormats, usage)
}

func (c *choiceValue) String() string {
	if c == nil || c.p == nil {
		return ""
	}
	return *c.p
}

// Set takes v when it is one of the choices.
func (c *choiceValue) Set(v string) error {
	items := []string{v}
	if c.list {
		items = splitList(v)
	}
	for _, item := range items {
		if !slices.Contains(c.choices, item) {
			return fmt.Errorf("must be %s", c.want())
		}
	}
	if len(items) == 0 {
		return fmt.Errorf("must be %s", c.want())
	}
	*c.p = v
	return nil
}

// want says what Set takes: "text or json", "meta or tablet, comma-separated".
func (c *choiceValue) want() string {
	if c.list {
		return "one or more of " + strings.Join(c.choices, ", ") + ", comma-separated"
	}
	return orList(c.choices)
}

// Type names the value in help text; "string" also lets pflag's GetString
// read it.
func (c *choiceValue) Type() string { return "string" }

// completions are the values shell completion offers.
func (c *choiceValue) completions() []string {
	if !c.list || len(c.choices) < 2 {
		return c.choices
	}
	return append(slices.Clone(c.choices), strings.Join(c.choices, ","))
}

// ackChoices are the values of --acks (client.ParseAcks).
var ackChoices = []string{"all", "1", "0"}

// logLevelVar defines --log-level, starting at def.
func logLevelVar(fs *flag.FlagSet, def string) *string {
	level := new(string)
	choiceVar(fs, level, "log-level", def, []string{"debug", "info", "warn", "error"}, "debug, info, warn or error")
	return level
}

// rangeValue is an int flag that, when given, must be from min to max (at
// least min with max 0). Left out it stays 0, which the command reads as
// "the default", so a 0 given is refused rather than taken as one.
type rangeValue struct {
	p        *int
	min, max int
}

// rangeVar defines flag name on fs, storing into p, which starts at 0.
func rangeVar(fs *flag.FlagSet, p *int, name string, min, max int, usage string) {
	*p = 0
	fs.Var(&rangeValue{p: p, min: min, max: max}, name, usage)
}

func (r *rangeValue) String() string {
	if r == nil || r.p == nil {
		return "0"
	}
	return strconv.Itoa(*r.p)
}

// Set takes v when it is a number in range.
func (r *rangeValue) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err == nil && n >= r.min && (r.max == 0 || n <= r.max) {
		*r.p = n
		return nil
	}
	if r.max == 0 {
		return fmt.Errorf("must be a number of at least %d", r.min)
	}
	return fmt.Errorf("must be a number from %d to %d", r.min, r.max)
}

// Type names the value in help text.
func (r *rangeValue) Type() string { return "int" }

// stringList collects a repeated flag's values in order.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (l *stringList) Type() string { return "string" }
