package spec

import (
	"strings"
	"testing"
)

func TestApplyEnvRefusesBadSeed002ValuesNamingTheVariable(t *testing.T) {
	bad := map[string]string{
		EnvDispatchMode:     "fastest",
		EnvWorkerSelection:  "random",
		EnvLambdaTraining:   "1.5",
		EnvSelectionJitter:  "-1",
		EnvElasticMinActive: "-2",
		EnvElasticPoll:      "0",
		EnvContextReuse:     "maybe",
		EnvWorkerCacheTTL:   "soon",
		EnvDensityBucket:    "90000", // above a day: refused here, naming the variable
	}
	var s Scheduling
	err := s.ApplyEnv(func(k string) (string, bool) { v, ok := bad[k]; return v, ok })
	if err == nil {
		t.Fatal("bad values accepted")
	}
	for name := range bad {
		if !strings.Contains(err.Error(), name+": ") {
			t.Errorf("the error does not name %s:\n%v", name, err)
		}
	}
	if !strings.Contains(err.Error(), EnvDensityBucket+`: "90000" is not a number of seconds from 1 to 86400`) {
		t.Errorf("the density bucket's error: %v", err)
	}
	if s.Placement.Mode != "" || s.Placement.Lambda.Training != nil || s.Placement.Elastic.MinActiveWorkers != nil {
		t.Errorf("a refused value was kept: %+v", s.Placement)
	}
}
