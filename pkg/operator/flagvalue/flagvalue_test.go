package flagvalue

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestBoolNotParsesAsABoolAndStoresItsNegation(t *testing.T) {
	tests := []struct {
		name    string
		def     bool
		args    []string
		want    bool // the stored field
		wantErr bool
	}{
		{"default on leaves the field off", true, nil, false, false},
		{"default off sets the field", false, nil, true, false},
		{"=false sets the field", true, []string{"--x=false"}, true, false},
		{"alone is true", false, []string{"--x"}, false, false},
		{"=true clears the field", false, []string{"--x=true"}, false, false},
		{"not a bool", true, []string{"--x=maybe"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			var field bool
			BoolNot(fs, &field, "x", tc.def, "usage")
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error %v, want error %v", tc.args, err, tc.wantErr)
			}
			if err == nil && field != tc.want {
				t.Errorf("field %v, want %v", field, tc.want)
			}
		})
	}
}

func TestBoolNotShowsAsABoolFlag(t *testing.T) {
	for _, def := range []bool{true, false} {
		want := pflag.NewFlagSet("want", pflag.ContinueOnError)
		want.Bool("x", def, "usage")
		got := pflag.NewFlagSet("got", pflag.ContinueOnError)
		var field bool
		BoolNot(got, &field, "x", def, "usage")
		if w, g := want.FlagUsages(), got.FlagUsages(); w != g {
			t.Errorf("default %v: usage %q, want %q", def, g, w)
		}
		if w, g := want.Lookup("x"), got.Lookup("x"); w.DefValue != g.DefValue || w.NoOptDefVal != g.NoOptDefVal || w.Value.Type() != g.Value.Type() {
			t.Errorf("default %v: flag %+v, want %+v", def, g, w)
		}
	}
}
