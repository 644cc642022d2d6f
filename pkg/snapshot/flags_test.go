package snapshot

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestMaxInputSizeFlagReadsAQuantity(t *testing.T) {
	tests := []struct {
		arg     string
		want    int64
		wantErr bool
	}{
		{"", DefaultMaxInputSize, false},
		{"256Mi", 256 << 20, false},
		{"1000000", 1000000, false},
		{"0", 0, true},
		{"-1Ki", 0, true},
		{"a lot", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			var in Input
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			in.AddFlags(fs, "files")
			var args []string
			if tc.arg != "" {
				args = []string{"--max-input-size", tc.arg}
			}
			err := fs.Parse(args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error %v, want error %v", args, err, tc.wantErr)
			}
			if err == nil && in.MaxInputSize != tc.want {
				t.Errorf("MaxInputSize %d, want %d", in.MaxInputSize, tc.want)
			}
		})
	}
}
