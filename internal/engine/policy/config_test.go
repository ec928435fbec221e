package policy

import (
	"strings"
	"testing"

	"github.com/allot-sched/allot/internal/model"
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
