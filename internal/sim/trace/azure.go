package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/model"
)

// TokenModel turns an LLM request's token counts into a run time:
//
//	duration = Base + ContextTokens × PerContextToken + GeneratedTokens × PerGeneratedToken
//
// Prefill (the context) is processed in parallel and is cheap per token;
// decoding emits one token at a time and dominates. The defaults are round
// figures for a mid-size model on one accelerator, not a measurement: tune
// them to the hardware being modelled.
type TokenModel struct {
	Base              time.Duration `json:"base"`
	PerContextToken   time.Duration `json:"perContextToken"`
	PerGeneratedToken time.Duration `json:"perGeneratedToken"`
}

// DefaultTokenModel is used when AzureOptions.Model is nil: 50 ms of
// overhead, prefill at 10,000 tokens/s, decoding at 50 tokens/s.
var DefaultTokenModel = TokenModel{Base: 50 * time.Millisecond, PerContextToken: 100 * time.Microsecond,
	PerGeneratedToken: 20 * time.Millisecond}

// Duration applies the model.
func (m TokenModel) Duration(context, generated int64) time.Duration {
	return m.Base + time.Duration(context)*m.PerContextToken + time.Duration(generated)*m.PerGeneratedToken
}

// Endpoint assignment rules for AzureOptions.Assign.
const (
	AssignRoundRobin = "round-robin"
	AssignHash       = "hash"
)

// AzureOptions say how Azure LLM inference trace rows become jobs.
type AzureOptions struct {
	// Queue of every job; default "default".
	Queue string
	// Start is time zero: when set, the first request arrives at Start and
	// the others keep their offsets from it; when zero, jobs keep the
	// trace's own timestamps (read as UTC) and AzureInfo.Start is the first.
	Start time.Time
	// Model turns tokens into run time; nil uses DefaultTokenModel.
	Model *TokenModel
	// Endpoints, when set, are assigned to jobs' Endpoint field, by Assign:
	// "round-robin" (default: row i gets Endpoints[i mod n]) or "hash" (FNV-1a
	// of the job id). The engine's configuration must define them.
	Endpoints []string
	Assign    string
	// Load is each endpoint job's load in concurrent requests; 0 means 1,
	// as one LLM request is one request at a time.
	Load int
	// Share and Requestor are copied to every job.
	Share, Requestor string
	// Resources is what each request's task asks for; zero takes one slot.
	Resources model.Resources
	// Limit keeps the first Limit requests; 0 keeps all.
	Limit int
}

// AzureInfo is what loading an Azure trace found.
type AzureInfo struct {
	// Start is time zero: AzureOptions.Start or the first timestamp.
	Start time.Time `json:"start"`
	// First and Last are the first and last request timestamps as written.
	First           time.Time  `json:"first"`
	Last            time.Time  `json:"last"`
	Requests        int        `json:"requests"`
	ContextTokens   int64      `json:"contextTokens"`
	GeneratedTokens int64      `json:"generatedTokens"`
	Model           TokenModel `json:"model"`
	// WorkSeconds is the sum of the modelled run times.
	WorkSeconds float64 `json:"workSeconds"`
}

// azureTimeLayout is the trace's timestamp format; the fraction (7 digits in
// the published files) is accepted without being spelled out.
const azureTimeLayout = "2006-01-02 15:04:05"

// LoadAzureLLMFile loads an Azure LLM inference trace file.
func LoadAzureLLMFile(path string, opt AzureOptions) ([]model.Job, AzureInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, AzureInfo{}, err
	}
	defer f.Close()
	jobs, info, err := LoadAzureLLM(f, opt)
	if err != nil {
		return nil, info, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, info, nil
}

// LoadAzureLLM reads the Azure LLM inference trace CSV (columns TIMESTAMP,
// ContextTokens, GeneratedTokens, found by header name). Each row becomes a
// job "r<row>" with one task "req" whose duration the token model gives.
// Gzip input is recognised by its magic bytes.
func LoadAzureLLM(r io.Reader, opt AzureOptions) ([]model.Job, AzureInfo, error) {
	var info AzureInfo
	m := DefaultTokenModel
	if opt.Model != nil {
		m = *opt.Model
	}
	info.Model = m
	if m.Base < 0 || m.PerContextToken < 0 || m.PerGeneratedToken < 0 {
		return nil, info, fmt.Errorf("model: durations must not be negative (%+v)", m)
	}
	if opt.Queue == "" {
		opt.Queue = "default"
	}
	if opt.Assign == "" {
		opt.Assign = AssignRoundRobin
	}
	if opt.Assign != AssignRoundRobin && opt.Assign != AssignHash {
		return nil, info, fmt.Errorf("assign: unknown rule %q (known: round-robin, hash)", opt.Assign)
	}
	if opt.Limit < 0 {
		return nil, info, fmt.Errorf("limit: must not be negative (got %d)", opt.Limit)
	}
	if opt.Load < 0 {
		return nil, info, fmt.Errorf("load: must not be negative (got %d)", opt.Load)
	}
	in, err := maybeGzip(r)
	if err != nil {
		return nil, info, err
	}
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, info, fmt.Errorf("header: %w", err)
	}
	head = slices.Clone(head) // ReuseRecord overwrites it on the next Read
	col := map[string]int{"timestamp": -1, "contexttokens": -1, "generatedtokens": -1}
	for i, h := range head {
		k := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, ok := col[k]; ok {
			col[k] = i
		}
	}
	for _, k := range []string{"timestamp", "contexttokens", "generatedtokens"} {
		if col[k] < 0 {
			return nil, info, fmt.Errorf("header: no %s column (have %v)", k, head)
		}
	}
	var jobs []model.Job
	for row := 1; opt.Limit == 0 || len(jobs) < opt.Limit; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, info, err
		}
		line := row + 1
		ts, err := time.Parse(azureTimeLayout, strings.TrimSpace(rec[col["timestamp"]]))
		if err != nil {
			if ts, err = time.Parse(time.RFC3339Nano, strings.TrimSpace(rec[col["timestamp"]])); err != nil {
				return nil, info, fmt.Errorf("line %d: TIMESTAMP %q is not a time like 2023-11-16 18:17:03.9799600", line, rec[col["timestamp"]])
			}
		}
		ts = ts.UTC()
		tokens := func(name string) (int64, error) {
			v, err := strconv.ParseInt(strings.TrimSpace(rec[col[name]]), 10, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("line %d: %s %q is not a token count", line, head[col[name]], rec[col[name]])
			}
			return v, nil
		}
		ctx, err := tokens("contexttokens")
		if err != nil {
			return nil, info, err
		}
		gen, err := tokens("generatedtokens")
		if err != nil {
			return nil, info, err
		}
		if len(jobs) == 0 {
			info.First = ts
			info.Start = opt.Start
			if info.Start.IsZero() {
				info.Start = ts
			}
		}
		info.Last = ts
		d := m.Duration(ctx, gen)
		id := "r" + strconv.Itoa(row)
		j := model.Job{ID: id, Queue: opt.Queue, Share: opt.Share, Requestor: opt.Requestor,
			Submitted: info.Start.Add(ts.Sub(info.First)),
			Tasks:     []model.Task{{Name: "req", Duration: d, Resources: opt.Resources, Category: model.CategoryInference}}}
		if n := len(opt.Endpoints); n > 0 {
			i := len(jobs) % n
			if opt.Assign == AssignHash {
				h := fnv.New64a()
				h.Write([]byte(id))
				i = int(h.Sum64() % uint64(n))
			}
			j.Endpoint = opt.Endpoints[i]
			j.Load = max(1, opt.Load)
		}
		jobs = append(jobs, j)
		info.ContextTokens += ctx
		info.GeneratedTokens += gen
		info.WorkSeconds += d.Seconds()
	}
	info.Requests = len(jobs)
	return jobs, info, nil
}
