package store

import (
	"encoding/json"
	"fmt"
)

// ReadTokenLists decodes a token row's JSON columns (its queues, shares,
// workers and limits) into t, as every store keeps them. A row that cannot
// be read fails closed: no scope, no limits, and Unreadable set, which
// authorises nothing; the row itself is left as it is for the operator.
func ReadTokenLists(t *Token, queues, shares, workers, limits []byte) {
	if err := decodeTokenLists(t, queues, shares, workers, limits); err != nil {
		t.Queues, t.Shares, t.Workers, t.Limits = nil, nil, nil, TokenLimits{}
		t.Unreadable = err.Error()
	}
}

// decodeTokenLists decodes a token row's JSON columns into t.
func decodeTokenLists(t *Token, queues, shares, workers, limits []byte) error {
	for _, l := range []struct {
		name string
		raw  []byte
		out  *[]string
	}{{"queues", queues, &t.Queues}, {"shares", shares, &t.Shares}, {"workers", workers, &t.Workers}} {
		if len(l.raw) == 0 {
			continue
		}
		if err := json.Unmarshal(l.raw, l.out); err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		if len(*l.out) == 0 {
			*l.out = nil
		}
	}
	if len(limits) > 0 {
		if err := json.Unmarshal(limits, &t.Limits); err != nil {
			return fmt.Errorf("limits: %w", err)
		}
		l := &t.Limits
		for _, lst := range []*[]string{&l.Requestors, &l.SLAGroups, &l.Users} {
			if len(*lst) == 0 {
				*lst = nil
			}
		}
	}
	return nil
}
