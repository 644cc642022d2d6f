// Package flagvalue holds the pflag values the operator's packages share
// when they bind their Options to flags (each package's AddFlags).
package flagvalue

import (
	"strconv"

	"github.com/spf13/pflag"
)

// BoolNot registers on fs a boolean flag whose value is the negation of
// *p: an Options field that says what is off (Disabled, NoNominations)
// bound to a flag that says what is on (--disruption, --nominate-pods).
// The flag reads and parses as a BoolVar's does: `--name` alone is true,
// its type is bool and its default is value. *p is set to !value.
func BoolNot(fs *pflag.FlagSet, p *bool, name string, value bool, usage string) {
	*p = !value
	fs.Var((*notBool)(p), name, usage)
	fs.Lookup(name).NoOptDefVal = "true"
}

// notBool is a pflag.Value that stores the negation of the flag.
type notBool bool

// Set parses s as a bool and stores its negation.
func (b *notBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b = notBool(!v)
	return nil
}

// String is the flag's value: the negation of what is stored.
func (b *notBool) String() string { return strconv.FormatBool(!bool(*b)) }

// Type is "bool", so that help and docs show the flag as a BoolVar's.
func (b *notBool) Type() string { return "bool" }
