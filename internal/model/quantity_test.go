package model

import (
	"testing"
	"time"
)

func TestParseQuantities(t *testing.T) {
	cpu := []struct {
		in   string
		want CPU
		bad  bool
	}{
		{"2", 2000, false}, {"0.5", 500, false}, {"250m", 250, false}, {"-1", 0, true}, {"two", 0, true}, {"1.5m", 0, true},
		// Only plain decimals: no sign, hex, special values or separators.
		{"+2", 0, true}, {"0x10", 0, true}, {"0x1p4", 0, true}, {"Inf", 0, true}, {"1_000", 0, true}, {"+250m", 0, true},
		{"1e3", 1_000_000, false}, {" 2 ", 2000, false},
	}
	for _, c := range cpu {
		got, err := ParseCPU(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseCPU(%q) = %v, %v; want %v, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
	mem := []struct {
		in   string
		want Memory
		bad  bool
	}{
		{"512", 512, false}, {"512Mi", 512, false}, {"16Gi", 16384, false}, {"1Ti", 1 << 20, false},
		{"1G", 954, false}, {"1.5Gi", 1536, false}, {"-4Gi", 0, true}, {"lots", 0, true},
		{"+1Gi", 0, true}, {"0x10Gi", 0, true}, {"infinityGi", 0, true}, {"1_000Mi", 0, true}, {"1e30Gi", 0, true}, {".5Gi", 512, false},
	}
	for _, c := range mem {
		got, err := ParseMemory(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseMemory(%q) = %v, %v; want %v, bad=%v", c.in, got, err, c.want, c.bad)
		}
	}
	dur := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"90s", 90 * time.Second, false}, {"1h30m", 90 * time.Minute, false}, {"30", 30 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false}, {"-5m", 0, true}, {"-3", 0, true}, {"soon", 0, true},
	}
	for _, c := range dur {
		got, err := ParseDuration(c.in)
		if (err != nil) != c.bad || time.Duration(got) != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, bad=%v", c.in, time.Duration(got), err, c.want, c.bad)
		}
	}
}
