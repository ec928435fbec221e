package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testSettings is the block of the test kinds "alpha" and "beta".
type testSettings struct {
	Level int `yaml:"level,omitempty" json:"level,omitempty"`
}

func (s *testSettings) Validate() error {
	if s != nil && s.Level < 0 {
		return errors.New("alpha.level: must not be negative")
	}
	return nil
}

type betaSettings struct {
	On bool `yaml:"on,omitempty" json:"on,omitempty"`
}

func (*betaSettings) Validate() error { return nil }

func init() {
	RegisterPolicyBlock("alpha", (*testSettings)(nil))
	RegisterPolicyBlock("beta", (*betaSettings)(nil))
}

// A policy block decodes into its policy's own type, keeps the blocks of
// other policies beside it, and writes back as it was read.
func TestConfigRoundTrips(t *testing.T) {
	const doc = "kind: alpha\nalpha:\n  level: 3\nbeta:\n  on: true\n"
	var c PolicyConfig
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if s, ok := c.Settings.(*testSettings); !ok || s.Level != 3 {
		t.Fatalf("settings = %#v", c.Settings)
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"kind":"alpha","alpha":{"level":3},"beta":{"on":true}}` {
		t.Fatalf("JSON = %s", b)
	}
	var back PolicyConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if s := back.Settings.(*testSettings); s.Level != 3 || back.others["beta"].(*betaSettings).On != true {
		t.Fatalf("JSON round trip = %#v", back)
	}
	y, err := yaml.Marshal(back)
	if want := "kind: alpha\nalpha:\n    level: 3\nbeta:\n    \"on\": true\n"; err != nil || string(y) != want {
		t.Fatalf("YAML = %q, %v; want %q", y, err, want)
	}
}

func TestConfigRefusesUnknownKeys(t *testing.T) {
	var c PolicyConfig
	if err := json.Unmarshal([]byte(`{"kind":"alpha","gamma":{}}`), &c); err == nil {
		t.Error("JSON: an unknown block decoded")
	}
	dec := yaml.NewDecoder(strings.NewReader("kind: alpha\nalpha: {levle: 2}\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err == nil {
		t.Error("YAML: a misspelt key decoded")
	}
}
