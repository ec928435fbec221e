package cgroup

import "os"

// readDirs lists the subdirectories (child groups) of d.
func readDirs(d string) ([]string, error) {
	ents, err := os.ReadDir(d)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
