package model

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldErrorsOfRootsEveryPathUnderThePrefix(t *testing.T) {
	cause := errors.New("cause")
	cases := []struct {
		name string
		err  error
		want []string // Error() of each field error
	}{
		{"one field error", Invalid("mode", "unknown"), []string{"placement.mode: unknown"}},
		{"a list", FieldErrors{Invalid("a", "x"), Invalid("[2].b", "y")}, []string{"placement.a: x", "placement[2].b: y"}},
		{"a joined list", errors.Join(Invalid("a", "x"), FieldErrors{Invalid("b", "y")}), []string{"placement.a: x", "placement.b: y"}},
		{"a wrapped field error", fmt.Errorf("checking: %w", &FieldError{Path: "c", Msg: "z", Line: 3}), []string{"line 3: placement.c: z"}},
		// An error that is not a field error is kept whole at the prefix:
		// its text is never parsed for a path.
		{"text that looks like a path", errors.New("fairshare.shares[0].share: required"), []string{"placement: fairshare.shares[0].share: required"}},
		{"text with no path", errors.New("something went wrong: badly"), []string{"placement: something went wrong: badly"}},
		{"a cause", fmt.Errorf("x: %w", cause), []string{"placement: x: cause"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FieldErrorsOf("placement", tc.err)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i, e := range got {
				if e.Error() != tc.want[i] {
					t.Errorf("[%d] = %q, want %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
	if got := FieldErrorsOf("p", fmt.Errorf("x: %w", cause)); !errors.Is(got[0], cause) {
		t.Errorf("the cause is lost: %v", got)
	}
	if FieldErrorsOf("p", nil) != nil || FieldErrors(nil).Err() != nil {
		t.Error("no error must stay no error")
	}
}

func TestJoinPath(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"", "b", "b"}, {"a", "", "a"}, {"a", "b", "a.b"}, {"a", "[1].b", "a[1].b"},
	} {
		if got := JoinPath(tc.a, tc.b); got != tc.want {
			t.Errorf("JoinPath(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}
