package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Bounds on quantities. They are far beyond any machine or task, and low
// enough that the engine's sums over a whole fleet or a queue of a million
// tasks stay exact in 64 bits: a quantity that wrapped (1e30 bytes read as
// the most negative integer) would make a task fit anywhere, and a stored
// one that cannot be read back would stop the server at its next start.
const (
	// MaxCPU is a million cores.
	MaxCPU CPU = 1_000_000 * 1000
	// MaxMemory is 1 PiB, for memory and for GPU memory.
	MaxMemory Memory = 1 << 30
	// MaxGPUs bounds the GPUs of one task or worker.
	MaxGPUs = 100_000
	// MaxDuration is the longest duration Go's time.Duration holds, about
	// 292 years.
	MaxDuration = Duration(math.MaxInt64)
)

// CPU is a number of cores: 2, 0.5 or "500m" (thousandths, as Kubernetes
// writes them). It is held in thousandths so arithmetic stays exact.
type CPU int64

// ParseCPU reads a CPU quantity: a number of cores, or thousandths with an
// "m", from 0 to MaxCPU.
func ParseCPU(s string) (CPU, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (CPU, error) {
		if why != "" {
			why = ": " + why
		}
		return 0, fmt.Errorf("%q is not a CPU quantity (like 2, 0.5 or 500m)%s", s, why)
	}
	if !plainDecimal(strings.TrimSuffix(s, "m")) {
		return bad("")
	}
	var milli float64
	if strings.HasSuffix(s, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return bad("")
		}
		milli = float64(n)
		if errors.Is(err, strconv.ErrRange) {
			milli = math.Copysign(math.Inf(1), float64(n))
		}
	} else {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return bad("")
		}
		milli = f * 1000
	}
	switch {
	case math.IsNaN(milli):
		return bad("not a number")
	case milli < 0:
		return bad("must not be negative")
	case milli > float64(MaxCPU):
		return bad(fmt.Sprintf("more than the maximum of %d cores", MaxCPU/1000))
	}
	return CPU(math.Round(milli)), nil
}

// plainDecimal reports whether s is a plain decimal number: digits with
// an optional fraction and exponent (2, 0.5, .5, 1e3). strconv alone also
// takes signs, hexadecimal, digit separators and the words for infinity
// and not-a-number, none of which a quantity means.
func plainDecimal(s string) bool {
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		exp = strings.TrimPrefix(strings.TrimPrefix(exp, "-"), "+")
		if !allDigits(exp) || exp == "" {
			return false
		}
	}
	whole, frac, _ := strings.Cut(mant, ".")
	return (whole != "" || frac != "") && allDigits(whole) && allDigits(frac)
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// UnmarshalText implements encoding.TextUnmarshaler, which the YAML
// decoder uses for a scalar. Its error is a FieldError without a path, so
// that a document reader places it at the field it decodes.
func (c *CPU) UnmarshalText(b []byte) error {
	v, err := ParseCPU(string(b))
	if err != nil {
		return &FieldError{Msg: err.Error()}
	}
	*c = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *CPU) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseCPU(unquote(b))
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
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15},
}

// ParseMemory reads a memory quantity, from 0 to MaxMemory; a bare number
// is MB.
func ParseMemory(s string) (Memory, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (Memory, error) {
		if why != "" {
			why = ": " + why
		}
		return 0, fmt.Errorf("%q is not a memory size (like 512Mi, 16Gi or a number of MB)%s", s, why)
	}
	num, unit := s, float64(1<<20)
	for _, u := range memUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, unit = strings.TrimSuffix(s, u.suffix), u.bytes
			break
		}
	}
	if !plainDecimal(num) {
		return bad("")
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return bad("")
	}
	mib := f * unit / (1 << 20)
	switch {
	case math.IsNaN(mib):
		return bad("not a number")
	case mib < 0:
		return bad("must not be negative")
	case mib > float64(MaxMemory):
		return bad(fmt.Sprintf("more than the maximum of %dPi", MaxMemory>>30))
	}
	return Memory(math.Ceil(mib)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, which the YAML
// decoder uses for a scalar. Its error is a FieldError without a path, so
// that a document reader places it at the field it decodes.
func (m *Memory) UnmarshalText(b []byte) error {
	v, err := ParseMemory(string(b))
	if err != nil {
		return &FieldError{Msg: err.Error()}
	}
	*m = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *Memory) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseMemory(unquote(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// MarshalJSON writes the size as "NMi".
func (m Memory) MarshalJSON() ([]byte, error) { return json.Marshal(fmt.Sprintf("%dMi", int64(m))) }

// unquote returns a JSON string's text, or any other JSON value as written.
func unquote(b []byte) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

// Duration is a length of time written as Go does ("90s", "5m", "1h30m")
// or as a number of seconds, from 0 to MaxDuration.
type Duration time.Duration

// ParseDuration reads a duration.
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch ns := f * float64(time.Second); {
		case math.IsNaN(f):
			return 0, fmt.Errorf("%q is not a duration (like 90s, 5m, 1h30m or a number of seconds)", s)
		case f < 0:
			return 0, fmt.Errorf("%q is not a duration: must not be negative", s)
		case ns >= float64(MaxDuration):
			return 0, fmt.Errorf("%q is not a duration: more than the maximum of %s", s, time.Duration(MaxDuration))
		default:
			return Duration(ns), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (like 90s, 5m, 1h30m or a number of seconds, at most %s)", s, time.Duration(MaxDuration))
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is not a duration: must not be negative", s)
	}
	return Duration(d), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, which the YAML
// decoder uses for a scalar. Its error is a FieldError without a path, so
// that a document reader places it at the field it decodes.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return &FieldError{Msg: err.Error()}
	}
	*d = v
	return nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseDuration(unquote(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as Go formats it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }
