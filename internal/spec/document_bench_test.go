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
