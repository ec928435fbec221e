package spec

import (
	"errors"
	"testing"
)

func TestExpandVarsReplacesEachNamedVariable(t *testing.T) {
	doc := "id: etl-${{ day }}\ntasks:\n- name: t\n  run: echo ${HOME} ${{day}} ${tasks.a.result.x} ${{ region }}\n"
	if got := Vars([]byte(doc)); !same(got, []string{"day", "region"}) {
		t.Fatalf("Vars = %v", got)
	}
	out, err := ExpandVars([]byte(doc), map[string]string{"day": "2026-01-02", "region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	want := "id: etl-2026-01-02\ntasks:\n- name: t\n  run: echo ${HOME} 2026-01-02 ${tasks.a.result.x} eu\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	_, err = ExpandVars([]byte(doc), map[string]string{"day": "x"})
	var ve *VarError
	if !errors.As(err, &ve) || ve.Name != "region" || ve.Line != 4 {
		t.Fatalf("err = %v, want region unset on line 4", err)
	}
	for name, ok := range map[string]bool{"day": true, "a.b-c_d": true, "1x": false, "a b": false, "": false, "a}}${{b": false} {
		if ValidVarName(name) != ok {
			t.Errorf("ValidVarName(%q) = %v, want %v", name, !ok, ok)
		}
	}
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
