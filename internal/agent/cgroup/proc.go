package cgroup

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
)

// v1Controllers are the v1 controllers the package uses.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer", "devices"}

// Mount is one cgroup mount of a mountinfo file: where it is mounted, the
// cgroup at its root, and whether it is the unified (v2) hierarchy or, for
// v1, which of v1Controllers it carries. The agent's own limits are read
// through the same mounts (internal/agent/limits_cgroup.go).
type Mount struct {
	Point, Root string
	V2          bool
	Controllers []string // v1 only
}

// ParseMountinfo lists the cgroup mounts of a mountinfo file
// (/proc/self/mountinfo), whose lines are "ID PARENT MAJ:MIN ROOT POINT
// OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS"; a v1 mount names its
// controllers among its super options, and one with none of
// v1Controllers (name=systemd and the like) is left out.
func ParseMountinfo(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f1, f2 := strings.Fields(pre), strings.Fields(post)
		if len(f1) < 5 || len(f2) < 3 {
			continue
		}
		m := Mount{Root: unescape(f1[3]), Point: unescape(f1[4])}
		switch f2[0] {
		case "cgroup2":
			m.V2 = true
		case "cgroup":
			for o := range strings.SplitSeq(f2[2], ",") {
				if slices.Contains(v1Controllers, o) {
					m.Controllers = append(m.Controllers, o)
				}
			}
			if len(m.Controllers) == 0 {
				continue
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ParseProcCgroup reads /proc/<pid>/cgroup, one "ID:controllers:path" line
// per hierarchy: the process's group per v1 controller, and under "" its
// group in the unified hierarchy ("0::path").
func ParseProcCgroup(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}
