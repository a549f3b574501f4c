package agentsim

import (
	"flag"
	"testing"
)

// TestTestbedSerialFlag: --testbed-serial defaults to the simulator's serial fraction, sets
// the testbed physics, and must be a fraction.
func TestTestbedSerialFlag(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    float64
		wantErr bool
	}{
		"default":        {want: 0.1},
		"set":            {args: []string{"--testbed-serial", "0.3"}, want: 0.3},
		"linear":         {args: []string{"--testbed-serial", "0"}, want: 0},
		"not a fraction": {args: []string{"--testbed-serial", "1.5"}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var o Options
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o.Flags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			ph, err := o.Physics()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if err == nil && ph.Serial != tc.want {
				t.Errorf("Serial %v, want %v", ph.Serial, tc.want)
			}
		})
	}
}
