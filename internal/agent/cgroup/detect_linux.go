package cgroup

import (
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
// ownDir is the directory of the process's group path in the hierarchy
// mounted as m.
func ownDir(m Mount, path string) string {
	rel := path
	if m.Root != "/" && strings.HasPrefix(path, m.Root) {
		rel = strings.TrimPrefix(path, m.Root)
	}
	return filepath.Join(m.Point, rel)
}

// detect finds the hierarchy to use from the process's mounts and groups.
func detect(version int) (hierarchy, error) {
	mounts, err := ParseMountinfo("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading the mounts: %w", err)
	}
	own, err := ParseProcCgroup("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading the agent's own groups: %w", err)
	}
	var unified *Mount
	h1 := &v1{own: map[string]string{}}
	for i, m := range mounts {
		if m.V2 {
			if unified == nil {
				unified = &mounts[i]
			}
			continue
		}
		for _, c := range m.Controllers {
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
		return &v2{own: ownDir(*unified, p), mount: unified.Point}, nil
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
