package spec

import (
	"crypto/rand"
	"strings"
	"time"
)

// idAlphabet is the alphabet of a job ID's random part: digits and lower
// case letters without i, l, o and u, which read as other characters.
const idAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// NewJobID returns a new job ID: "job-", the UTC time to the second, and
// ten random characters (50 bits). Both the server (for a job sent without
// an ID) and the client (which names a job before sending it, so that a
// retry after a lost answer is recognised) make them; the ten thousand
// jobs of one bulk submission share the second, and 50 bits keep the
// chance that two of them meet below one in ten million.
func NewJobID(now time.Time) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	var s strings.Builder
	s.Grow(len("job-20060102-150405-") + len(b))
	s.WriteString("job-")
	s.WriteString(now.UTC().Format("20060102-150405"))
	s.WriteByte('-')
	for _, x := range b {
		s.WriteByte(idAlphabet[x%32])
	}
	return s.String()
}

// NewJobIDWithPrefix is NewJobID with prefix in place of "job": a new ID
// for each submission of the same document (allot submit --id-prefix), so
// that a file that names its job can be submitted again. The prefix must
// be a valid name short enough to leave room for the rest.
func NewJobIDWithPrefix(prefix string, now time.Time) string {
	return prefix + strings.TrimPrefix(NewJobID(now), "job")
}
