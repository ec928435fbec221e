package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/spec"
)

func TestLimitFlagsOverrideTheFileAndNameTheirErrors(t *testing.T) {
	file := spec.LimitSettings{MaxConnections: 500, ReservedConnections: 20, IdleTimeout: spec.Duration(time.Minute)}
	cases := []struct {
		name    string
		args    []string
		want    spec.LimitSettings
		wantErr string
	}{
		{"no flags keep the file", nil, file, ""},
		{"flags win over the file", []string{"--max-connections", "900", "--idle-timeout", "5s", "--min-body-rate", "100"},
			spec.LimitSettings{MaxConnections: 900, ReservedConnections: 20, IdleTimeout: spec.Duration(5 * time.Second), MinBodyRate: 100}, ""},
		{"a negative count names its flag", []string{"--max-connections-per-address", "-1"}, file, "--max-connections-per-address"},
		{"a negative duration names its flag", []string{"--body-timeout", "-1s"}, file, "--body-timeout"},
		{"a reserve as large as the maximum", []string{"--reserved-connections", "500"}, file, "server.limits.reservedConnections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f limitFlags
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			f.add(cmd)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			got := file
			err := f.apply(&got)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err %v, want one naming %s", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.wantErr == "" && got != tc.want:
				t.Errorf("limits %+v, want %+v", got, tc.want)
			}
		})
	}
}
