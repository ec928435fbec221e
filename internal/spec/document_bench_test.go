package spec

import "testing"

// BenchmarkDecodeJob decodes the body of a one-task job submission, as
// POST /v1/jobs does for every job.
func BenchmarkDecodeJob(b *testing.B) {
	body := []byte(`{"id":"bench-t-000042","tasks":[{"name":"t","count":1,"run":"true"}]}`)
	for b.Loop() {
		var js Job
		if _, err := Decode(body, &js); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJobYAML decodes a small job written in YAML, which the
// parser reads (and reads to its end, for text after the document).
func BenchmarkDecodeJobYAML(b *testing.B) {
	body := []byte("id: bench-y-000042\nqueue: batch\ntasks:\n  - name: t\n    count: 4\n    run: ./train.sh\n    env: {A: b}\n")
	for b.Loop() {
		var js Job
		if _, err := Decode(body, &js); err != nil {
			b.Fatal(err)
		}
	}
}
