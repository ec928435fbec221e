package trace

import (
	"strings"
	"testing"
	"time"
)

const smallAzure = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:04.0319600,3180,8
2023-11-16 18:17:05.9799600,110,27
`

func TestLoadAzureLLMDerivesDurationsFromTokens(t *testing.T) {
	m := TokenModel{Base: 10 * time.Millisecond, PerContextToken: time.Microsecond, PerGeneratedToken: 10 * time.Millisecond}
	jobs, info, err := LoadAzureLLM(strings.NewReader(smallAzure), AzureOptions{Model: &m, Queue: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	first := time.Date(2023, 11, 16, 18, 17, 3, 979960000, time.UTC)
	wantDur := []time.Duration{
		10*time.Millisecond + 4808*time.Microsecond + 100*time.Millisecond,
		10*time.Millisecond + 3180*time.Microsecond + 80*time.Millisecond,
		10*time.Millisecond + 110*time.Microsecond + 270*time.Millisecond,
	}
	wantAt := []time.Duration{0, 52 * time.Millisecond, 2 * time.Second}
	if len(jobs) != 3 || info.Requests != 3 || !info.Start.Equal(first) || info.ContextTokens != 8098 || info.GeneratedTokens != 45 {
		t.Fatalf("%d jobs, info %+v", len(jobs), info)
	}
	for i, j := range jobs {
		if j.Queue != "llm" || len(j.Tasks) != 1 || j.Tasks[0].Duration != wantDur[i] || j.Submitted.Sub(first) != wantAt[i] || j.Endpoint != "" {
			t.Errorf("job %d = %+v, want duration %s at +%s", i, j, wantDur[i], wantAt[i])
		}
	}
}

func TestLoadAzureLLMOptions(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("start shifts arrivals", func(t *testing.T) {
		jobs, info, err := LoadAzureLLM(strings.NewReader(smallAzure), AzureOptions{Start: start})
		if err != nil {
			t.Fatal(err)
		}
		if !info.Start.Equal(start) || !jobs[0].Submitted.Equal(start) || jobs[2].Submitted.Sub(start) != 2*time.Second {
			t.Errorf("start %s, arrivals %s, %s", info.Start, jobs[0].Submitted, jobs[2].Submitted)
		}
		if want := DefaultTokenModel.Duration(4808, 10); jobs[0].Tasks[0].Duration != want {
			t.Errorf("default model gives %s, want %s", jobs[0].Tasks[0].Duration, want)
		}
	})
	t.Run("round-robin endpoints", func(t *testing.T) {
		jobs, _, err := LoadAzureLLM(strings.NewReader(smallAzure), AzureOptions{Endpoints: []string{"a", "b"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := jobs[0].Endpoint + jobs[1].Endpoint + jobs[2].Endpoint; got != "aba" {
			t.Errorf("endpoints = %s, want aba", got)
		}
	})
	t.Run("hash endpoints are stable and from the list", func(t *testing.T) {
		eps := []string{"a", "b", "c"}
		j1, _, _ := LoadAzureLLM(strings.NewReader(smallAzure), AzureOptions{Endpoints: eps, Assign: AssignHash})
		j2, _, _ := LoadAzureLLM(strings.NewReader(smallAzure), AzureOptions{Endpoints: eps, Assign: AssignHash, Limit: 2})
		for i := range j2 {
			if j1[i].Endpoint != j2[i].Endpoint || !strings.Contains("abc", j1[i].Endpoint) || j1[i].Endpoint == "" {
				t.Errorf("job %d endpoint %q vs %q", i, j1[i].Endpoint, j2[i].Endpoint)
			}
		}
	})
	for _, tc := range []struct{ name, text, want string }{
		{"missing column", "TIMESTAMP,ContextTokens\n", "no generatedtokens column"},
		{"bad time", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,2\n", `line 2: TIMESTAMP "yesterday"`},
		{"bad tokens", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,x,2\n", `line 2: ContextTokens "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := LoadAzureLLM(strings.NewReader(tc.text), AzureOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
