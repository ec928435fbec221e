package spec

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
)

// Variables in a job document (allot submit --set KEY=VALUE). A document
// names a variable as ${{ KEY }} (the spaces are optional), anywhere in its
// text; the value replaces it as written, before the document is parsed,
// so quote it in YAML where a value could read as another type
// ("${{ tag }}"). The form is not the shell's ${KEY}: a task's run script
// keeps its own ${HOME}, and ${tasks.NAME.result.FIELD} references stay
// what they are. A variable the document names but no value gives is an
// error naming it and its line, and so is a value given for a variable the
// document does not name (a typo would otherwise pass silently).

// varPattern matches ${{ KEY }}; KEY is a name (letters, digits, '_', '-',
// '.', starting with a letter or '_').
var (
	varPattern = regexp.MustCompile(`\$\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}`)
	varName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)
)

// ValidVarName reports whether s can name a variable.
func ValidVarName(s string) bool {
	return varName.MatchString(s)
}

// VarError is a variable a document names that no value was given for.
type VarError struct {
	Name string
	Line int
}

func (e *VarError) Error() string {
	return fmt.Sprintf("line %d: variable %q is not set", e.Line, e.Name)
}

// Vars lists the variables a document names, sorted, once each.
func Vars(doc []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range varPattern.FindAllSubmatch(doc, -1) {
		if n := string(m[1]); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// ExpandVars replaces each ${{ KEY }} of doc with vars[KEY]. A KEY without a
// value is a *VarError (the first, by line).
func ExpandVars(doc []byte, vars map[string]string) ([]byte, error) {
	locs := varPattern.FindAllSubmatchIndex(doc, -1)
	if len(locs) == 0 {
		return doc, nil
	}
	var out bytes.Buffer
	out.Grow(len(doc))
	last := 0
	for _, l := range locs {
		name := string(doc[l[2]:l[3]])
		v, ok := vars[name]
		if !ok {
			return nil, &VarError{Name: name, Line: 1 + bytes.Count(doc[:l[0]], []byte("\n"))}
		}
		out.Write(doc[last:l[0]])
		out.WriteString(v)
		last = l[1]
	}
	out.Write(doc[last:])
	return out.Bytes(), nil
}
