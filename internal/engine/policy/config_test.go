package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
	"go.yaml.in/yaml/v3"
)

// testSettings is the block of the test kinds "alpha" and "beta".
type testSettings struct {
	Level int `yaml:"level,omitempty" json:"level,omitempty"`
}

func (s *testSettings) Validate() error {
	if s != nil && s.Level < 0 {
		return model.Invalid("alpha.level", "must not be negative")
	}
	return nil
}

type betaSettings struct {
	On bool `yaml:"on,omitempty" json:"on,omitempty"`
}

func (*betaSettings) Validate() error { return nil }

func init() {
	newFIFO := func(s Settings) (Policy, error) {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		return FIFO{}, nil
	}
	Register(Kind{Name: "alpha", Settings: (*testSettings)(nil), New: newFIFO})
	Register(Kind{Name: "beta", Settings: (*betaSettings)(nil), New: newFIFO})
}

// A policy block decodes into its policy's own type, keeps the blocks of
// other policies beside it, and writes back as it was read.
func TestConfigRoundTrips(t *testing.T) {
	const doc = "kind: alpha\nalpha:\n  level: 3\nbeta:\n  on: true\n"
	var c Config
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
	var back Config
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
	var c Config
	if err := json.Unmarshal([]byte(`{"kind":"alpha","gamma":{}}`), &c); err == nil {
		t.Error("JSON: an unknown block decoded")
	}
	dec := yaml.NewDecoder(strings.NewReader("kind: alpha\nalpha: {levle: 2}\n"))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err == nil {
		t.Error("YAML: a misspelt key decoded")
	}
}

func TestNewValidatesTheKindsBlock(t *testing.T) {
	if _, err := New(Config{Kind: "alpha", Settings: &testSettings{Level: -1}}); err == nil || err.Error() != "alpha.level: must not be negative" {
		t.Errorf("invalid block: %v", err)
	}
	if _, err := New(Config{Kind: "alpha"}); err != nil {
		t.Errorf("absent block: %v", err)
	}
	if _, err := New(Config{Kind: "alpha", Settings: &betaSettings{}}); err == nil {
		t.Error("another policy's block was taken")
	}
	if _, err := New(Config{Kind: "lottery"}); err == nil || !strings.HasPrefix(err.Error(), "kind: unknown policy") {
		t.Errorf("unknown kind: %v", err)
	}
}
