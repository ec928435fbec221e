package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// CPU is a number of cores: 2, 0.5 or "500m" (thousandths, as Kubernetes
// writes them). It is held in thousandths so arithmetic stays exact.
type CPU int64

// ParseCPU reads a CPU quantity.
func ParseCPU(s string) (CPU, error) {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a CPU quantity (like 2, 0.5 or 500m)", s)
		}
		return CPU(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a CPU quantity (like 2, 0.5 or 500m)", s)
	}
	return CPU(math.Round(f * 1000)), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (c *CPU) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseCPU(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Msg: err.Error()}
	}
	*c = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *CPU) UnmarshalJSON(b []byte) error {
	v, err := ParseCPU(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// MarshalJSON writes thousandths as "500m".
func (c CPU) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%dm", int64(c))) }

// Memory is a size in mebibytes, written as a number of MB or with a unit:
// 512Mi, 16Gi, 1Ti, 4G, 500M (decimal units are converted and rounded up).
type Memory int64

var memUnits = []struct {
	suffix string
	bytes  float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
}

// ParseMemory reads a memory quantity; a bare number is MB.
func ParseMemory(s string) (Memory, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("%q is not a memory size (like 512Mi, 16Gi or a number of MB)", s)
	for _, u := range memUnits {
		if strings.HasSuffix(s, u.suffix) {
			f, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suffix), 64)
			if err != nil || f < 0 || math.IsInf(f, 0) {
				return 0, bad
			}
			return Memory(math.Ceil(f * u.bytes / (1 << 20))), nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, bad
	}
	return Memory(math.Ceil(f)), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (m *Memory) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseMemory(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Msg: err.Error()}
	}
	*m = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *Memory) UnmarshalJSON(b []byte) error {
	v, err := ParseMemory(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalJSON writes the size as "NMi".
func (m Memory) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%dMi", int64(m))) }

// Duration is a length of time written as Go does ("90s", "5m", "1h30m")
// or as a number of seconds.
type Duration time.Duration

// ParseDuration reads a duration.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return 0, fmt.Errorf("%q is not a duration: must not be negative", s)
		}
		return Duration(time.Duration(f * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (like 90s, 5m, 1h30m or a number of seconds)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is not a duration: must not be negative", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Msg: err.Error()}
	}
	*d = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := ParseDuration(strings.Trim(string(b), `"`))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as Go formats it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
