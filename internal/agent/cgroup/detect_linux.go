package cgroup

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// v1Controllers are the v1 controllers the agent uses: limits (cpu,
// cpuset, memory, pids, devices), accounting (cpuacct) and killing
// (freezer).
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "freezer", "devices"}

// mount is one cgroup mount of /proc/self/mountinfo.
type mount struct {
	point, root string
	v2          bool
	controllers []string // v1 only
}

// parseMountinfo lists the cgroup mounts in a mountinfo file.
func parseMountinfo(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f1, f2 := strings.Fields(pre), strings.Fields(post)
		if len(f1) < 5 || len(f2) < 3 {
			continue
		}
		m := mount{root: unescape(f1[3]), point: unescape(f1[4])}
		switch f2[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for o := range strings.SplitSeq(f2[2], ",") {
				if slices.Contains(v1Controllers, o) {
					m.controllers = append(m.controllers, o)
				}
			}
			if len(m.controllers) == 0 {
				continue // name=systemd and the like
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
		if s[i] == '\\' && i+3 < len(s) {
			var n int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &n); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseProcCgroup reads /proc/<pid>/cgroup: the process's group per v1
// controller, and under "" its v2 group.
func parseProcCgroup(path string) (map[string]string, error) {
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

// ownDir is the directory of the process's group path in the hierarchy
// mounted as m.
func ownDir(m mount, path string) string {
	rel := path
	if m.root != "/" && strings.HasPrefix(path, m.root) {
		rel = strings.TrimPrefix(path, m.root)
	}
	return filepath.Join(m.point, rel)
}

// detect finds the hierarchy to use from the process's mounts and groups.
func detect(version int) (hierarchy, error) {
	mounts, err := parseMountinfo("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading the mounts: %w", err)
	}
	own, err := parseProcCgroup("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading the agent's own groups: %w", err)
	}
	var unified *mount
	h1 := &v1{own: map[string]string{}}
	for i, m := range mounts {
		if m.v2 {
			if unified == nil {
				unified = &mounts[i]
			}
			continue
		}
		for _, c := range m.controllers {
			if p, ok := own[c]; ok {
				if _, dup := h1.own[c]; !dup {
					h1.own[c] = ownDir(m, p)
				}
			}
		}
	}
	if unified == nil && len(h1.own) == 0 {
		return nil, errors.New("cgroup: no cgroup hierarchy is mounted")
	}
	use2 := false
	switch version {
	case 1:
		if len(h1.own) == 0 {
			return nil, errors.New("cgroup: no cgroup v1 controller is mounted")
		}
	case 2:
		if unified == nil {
			return nil, errors.New("cgroup: no cgroup v2 hierarchy is mounted")
		}
		use2 = true
	default:
		var avail string
		if p, ok := own[""]; ok && unified != nil {
			avail, _ = read(ownDir(*unified, p), "cgroup.controllers")
		}
		use2 = unified != nil && prefersV2(avail, h1.own)
	}
	if use2 {
		p, ok := own[""]
		if !ok {
			return nil, errors.New("cgroup: the agent's v2 group is unknown (/proc/self/cgroup)")
		}
		return &v2{own: ownDir(*unified, p), mount: unified.point}, nil
	}
	return h1, nil
}

// fakeV1 is a v1 hierarchy of one directory per controller under root.
func fakeV1(root string) (hierarchy, error) {
	h := &v1{own: map[string]string{}}
	for _, c := range v1Controllers {
		if fi, err := os.Stat(filepath.Join(root, c)); err == nil && fi.IsDir() {
			h.own[c] = filepath.Join(root, c)
		}
	}
	if len(h.own) == 0 {
		return nil, fmt.Errorf("cgroup: no v1 controller under %s", root)
	}
	return h, nil
}

// prefersV2 decides, on a host that mounts both, between the v2 tree
// (whose controllers for the agent's group are avail, as in
// cgroup.controllers) and the v1 controllers mounted (v1): hybrid hosts
// mount an empty-ish v2 tree beside the v1 controllers, and the one that
// limits is the one with more of the controllers the agent uses.
func prefersV2(avail string, v1 map[string]string) bool {
	n2, n1 := 0, 0
	for _, c := range v2Controllers {
		if slices.Contains(strings.Fields(avail), c) {
			n2++
		}
		if _, ok := v1[c]; ok {
			n1++
		}
	}
	return n2 >= n1
}
