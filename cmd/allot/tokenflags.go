package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/model"
)

// tokenFlags maps the fields of POST /v1/tokens to the flags of allot
// tokens create that set them, so that a refusal names what to type.
var tokenFlags = map[string]string{
	"role": "--role", "name": "--name", "queues": "--queue", "shares": "--share", "workers": "--worker",
	"maxPriority": "--max-priority", "urgent": "--urgent", "requestors": "--requestor", "slaGroups": "--sla-group",
	"users": "--user", "expiresIn": "--expires",
}

// withTokenFlags rewrites the server's refusal of a token so that each
// field error names the flag of its field instead of the JSON field.
func withTokenFlags(err error) error {
	var e *client.Error
	if !errors.As(err, &e) || (e.Field == "" && len(e.Details) == 0) {
		return err
	}
	details := e.Details
	if len(details) == 0 {
		details = []*model.FieldError{{Path: e.Field, Msg: strings.TrimPrefix(e.Message, e.Field+": ")}}
	}
	lines := make([]string, 0, len(details))
	for _, d := range details {
		name := d.Path
		if f, ok := tokenFlags[name]; ok {
			name = f
		}
		lines = append(lines, name+": "+d.Msg)
	}
	return fmt.Errorf("%s (%s, HTTP %d)", strings.Join(lines, "\n"), e.Code, e.Status)
}

// daysDuration is a duration flag that also takes days, as token lifetimes
// are usually given: 30d, 1d12h, 720h.
type daysDuration time.Duration

var daysRE = regexp.MustCompile(`^(\d+)d(.*)$`)

func (d *daysDuration) Set(s string) error {
	bad := fmt.Errorf("%q is not a duration: write it like 30d, 1d12h, 12h or 90m", s)
	var days time.Duration
	rest := s
	if m := daysRE.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 100_000 {
			return bad
		}
		days, rest = time.Duration(n)*24*time.Hour, m[2]
		if rest == "" {
			*d = daysDuration(days)
			return nil
		}
	}
	v, err := time.ParseDuration(rest)
	if err != nil || v < 0 {
		return bad
	}
	*d = daysDuration(days + v)
	return nil
}

func (d *daysDuration) String() string {
	if *d == 0 {
		return "0"
	}
	return time.Duration(*d).String()
}

func (d *daysDuration) Type() string { return "duration" }
