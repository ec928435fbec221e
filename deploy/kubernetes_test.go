package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/model"
)

// The Kubernetes manifests are checked without a cluster: every document
// decodes strictly into the Kubernetes API's own Go types (a misspelt or
// misplaced field is an error, as `kubectl apply --validate=strict` makes
// it), and what Allot needs of them is checked against the code: the probes
// against the routes the server serves, the termination grace against the
// agent's own stop, the worker names against the token's pattern and the
// name rule.

// manifestDir holds the manifests, relative to this package.
const manifestDir = "kubernetes"

// kinds are the Go types of the documents the manifests may hold, by
// apiVersion/kind.
var kinds = map[string]func() any{
	"v1/Namespace":        func() any { return new(corev1.Namespace) },
	"v1/Service":          func() any { return new(corev1.Service) },
	"v1/Secret":           func() any { return new(corev1.Secret) },
	"v1/ConfigMap":        func() any { return new(corev1.ConfigMap) },
	"apps/v1/StatefulSet": func() any { return new(appsv1.StatefulSet) },
	"apps/v1/DaemonSet":   func() any { return new(appsv1.DaemonSet) },
	"kustomize.config.k8s.io/v1beta1/Kustomization": func() any { return new(kustomization) },
}

// kustomization is the part of kustomize's Kustomization the manifests use;
// a field outside it fails the strict decoding, so that it is added here
// (and checked) rather than ignored.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace,omitempty"`
	Resources       []string `json:"resources"`
	Images          []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	// Patches are strategic merge patches, each naming the object it
	// patches by its apiVersion, kind and metadata.name.
	Patches []struct {
		Path string `json:"path"`
	} `json:"patches,omitempty"`
}

// notInAKustomization are the manifests no kustomization lists, and why.
var notInAKustomization = map[string]string{
	"worker-token.yaml": "a template: applying it again would replace the real token",
}

// document is one decoded YAML document of a manifest file.
type document struct {
	file string // relative to manifestDir
	kind string // apiVersion/kind
	obj  any
	raw  []byte // as written
}

// decodeStrict decodes one YAML document into the Go type its apiVersion
// and kind name, refusing fields that type does not have, duplicate keys
// and values of the wrong type.
func decodeStrict(doc []byte) (string, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	kind := tm.APIVersion + "/" + tm.Kind
	mk := kinds[kind]
	if mk == nil {
		return kind, nil, fmt.Errorf("apiVersion %q kind %q: no Go type to check it against (add it to kinds)", tm.APIVersion, tm.Kind)
	}
	// Duplicate keys are refused in the YAML, unknown fields (with their
	// path) and wrong types in the JSON, as the API server's strict field
	// validation does.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return kind, nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	obj := mk()
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err = errors.Join(append([]error{err}, strict...)...); err != nil {
		return kind, nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return kind, obj, nil
}

// splitDocuments splits a YAML stream at its "---" lines, dropping
// documents that hold only comments.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		for line := range strings.Lines(cur.String()) {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, bytes.Clone(cur.Bytes()))
				break
			}
		}
		cur.Reset()
	}
	for line := range bytes.Lines(data) {
		if strings.TrimSpace(string(line)) == "---" {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

// loadManifests decodes every YAML file under manifestDir.
func loadManifests(t *testing.T) []document {
	t.Helper()
	var out []document
	err := filepath.WalkDir(manifestDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(manifestDir, p)
		for i, doc := range splitDocuments(data) {
			kind, obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", rel, i+1, err)
				continue
			}
			out = append(out, document{file: filepath.ToSlash(rel), kind: kind, obj: obj})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no manifests under %s", manifestDir)
	}
	return out
}

// decodeFile decodes every document of a manifest file.
func decodeFile(t *testing.T, file string) []document {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(manifestDir, file)
	var out []document
	for i, doc := range splitDocuments(data) {
		kind, obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%s, document %d: %v", rel, i+1, err)
		}
		out = append(out, document{file: filepath.ToSlash(rel), kind: kind, obj: obj, raw: doc})
	}
	return out
}

// render is what kustomize builds from the kustomization in dir, as far as
// these checks need: its resources, those of the kustomizations it lists,
// and its patches applied (the namespace and image changes are left out).
func render(t *testing.T, dir string) []document {
	t.Helper()
	k, ok := decodeFile(t, filepath.Join(dir, "kustomization.yaml"))[0].obj.(*kustomization)
	if !ok {
		t.Fatalf("%s/kustomization.yaml is not a Kustomization", dir)
	}
	var docs []document
	for _, r := range k.Resources {
		p := filepath.Join(dir, filepath.FromSlash(r))
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			docs = append(docs, render(t, p)...)
		} else {
			docs = append(docs, decodeFile(t, p)...)
		}
	}
	for _, pt := range k.Patches {
		for _, patch := range decodeFile(t, filepath.Join(dir, filepath.FromSlash(pt.Path))) {
			name := patch.obj.(metav1.Object).GetName()
			i := slices.IndexFunc(docs, func(d document) bool {
				return d.kind == patch.kind && d.obj.(metav1.Object).GetName() == name
			})
			if i < 0 {
				t.Fatalf("%s patches %s %s, which %s does not have", patch.file, patch.kind, name, dir)
			}
			orig, err := json.Marshal(docs[i].obj)
			if err != nil {
				t.Fatal(err)
			}
			// The patch as written: its typed form would carry the fields it
			// leaves out as nulls, which a merge patch takes for deletions.
			pj, err := yaml.YAMLToJSON(patch.raw)
			if err != nil {
				t.Fatal(err)
			}
			merged, err := strategicpatch.StrategicMergePatch(orig, pj, kinds[patch.kind]())
			if err != nil {
				t.Fatalf("%s: %v", patch.file, err)
			}
			_, obj, err := decodeStrict(merged)
			if err != nil {
				t.Fatalf("%s patched by %s: %v", docs[i].file, patch.file, err)
			}
			docs[i].obj = obj
		}
	}
	return docs
}

// entryPoints are the kustomizations that no other one lists, what a user
// applies with kubectl apply -k, each rendered, by directory.
func entryPoints(t *testing.T) map[string][]document {
	t.Helper()
	var dirs []string
	listed := map[string]bool{}
	err := filepath.WalkDir(manifestDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "kustomization.yaml" {
			return err
		}
		dir := filepath.Dir(p)
		dirs = append(dirs, dir)
		for _, r := range decodeFile(t, p)[0].obj.(*kustomization).Resources {
			listed[filepath.Join(dir, filepath.FromSlash(r))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]document{}
	for _, d := range dirs {
		if !listed[d] {
			out[filepath.ToSlash(d)] = render(t, d)
		}
	}
	if len(out) == 0 {
		t.Fatal("no kustomization to apply")
	}
	return out
}

// forEachEntry runs check on what each entry point renders.
func forEachEntry(t *testing.T, check func(*testing.T, []document)) {
	entries := entryPoints(t)
	for _, dir := range slices.Sorted(maps.Keys(entries)) {
		t.Run(dir, func(t *testing.T) { check(t, entries[dir]) })
	}
}

func TestStrictDecodingRefusesWhatKubernetesWould(t *testing.T) {
	const good = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: w
spec:
  replicas: 1
  selector:
    matchLabels: {app: w}
  template:
    metadata:
      labels: {app: w}
    spec:
      terminationGracePeriodSeconds: 45
      containers:
        - name: w
          image: allot:dev
          resources:
            limits: {cpu: "2", memory: 4Gi}
`
	tests := []struct {
		name, doc, wantErr string
	}{
		{name: "a good StatefulSet", doc: good},
		{
			name:    "a misspelt field",
			doc:     strings.Replace(good, "terminationGracePeriodSeconds", "terminationGracePeriodSecond", 1),
			wantErr: `unknown field "spec.template.spec.terminationGracePeriodSecond"`,
		},
		{
			name:    "a field at the wrong level",
			doc:     strings.Replace(good, "  replicas: 1\n", "  replicas: 1\n  containers: []\n", 1),
			wantErr: `unknown field "spec.containers"`,
		},
		{
			name:    "a value of the wrong type",
			doc:     strings.Replace(good, "replicas: 1", "replicas: one", 1),
			wantErr: "replicas",
		},
		{
			name:    "a quantity that is not one",
			doc:     strings.Replace(good, "memory: 4Gi", "memory: 4 gigs", 1),
			wantErr: "quantities must match",
		},
		{
			name:    "a duplicate key",
			doc:     strings.Replace(good, "  replicas: 1\n", "  replicas: 1\n  replicas: 2\n", 1),
			wantErr: "replicas",
		},
		{
			name:    "an unknown kind",
			doc:     strings.Replace(good, "kind: StatefulSet", "kind: StatefulSets", 1),
			wantErr: `kind "StatefulSets": no Go type`,
		},
		{
			name:    "a misspelt kustomization field",
			doc:     "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresource:\n  - a.yaml\n",
			wantErr: `unknown field "resource"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeStrict([]byte(tt.doc))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v; want one with %q", err, tt.wantErr)
			}
		})
	}
}

func TestManifestsDecodeStrictlyAndKustomizationsListThem(t *testing.T) {
	docs := loadManifests(t)
	listed := map[string]bool{}
	for _, d := range docs {
		k, ok := d.obj.(*kustomization)
		if !ok {
			continue
		}
		dir := path.Dir(d.file)
		for _, r := range k.Resources {
			p := path.Join(dir, r)
			fi, err := os.Stat(filepath.Join(manifestDir, filepath.FromSlash(p)))
			switch {
			case err != nil:
				t.Errorf("%s lists %s: %v", d.file, r, err)
			case fi.IsDir():
				if _, err := os.Stat(filepath.Join(manifestDir, filepath.FromSlash(p), "kustomization.yaml")); err != nil {
					t.Errorf("%s lists the directory %s, which has no kustomization.yaml", d.file, r)
				}
			default:
				listed[p] = true
			}
		}
		for _, pt := range k.Patches {
			listed[path.Join(dir, pt.Path)] = true
		}
		for _, im := range k.Images {
			if im.Name != "allot" {
				t.Errorf("%s: image %q: the manifests' image is named allot", d.file, im.Name)
			}
		}
	}
	for _, d := range docs {
		if _, ok := d.obj.(*kustomization); ok || listed[d.file] {
			continue
		}
		if _, why := notInAKustomization[d.file]; !why {
			t.Errorf("%s is in no kustomization.yaml: list it, or say why not in notInAKustomization", d.file)
		}
	}
}

// workload is a StatefulSet or DaemonSet as these checks see it.
type workload struct {
	file, name  string
	selector    *metav1.LabelSelector
	pod         corev1.PodTemplateSpec
	serviceName string
	replicas    int32
	claims      []string // the names of its volume claim templates
}

func workloads(docs []document) []workload {
	var out []workload
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *appsv1.StatefulSet:
			r := int32(1)
			if o.Spec.Replicas != nil {
				r = *o.Spec.Replicas
			}
			w := workload{file: d.file, name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template,
				serviceName: o.Spec.ServiceName, replicas: r}
			for _, c := range o.Spec.VolumeClaimTemplates {
				w.claims = append(w.claims, c.Name)
			}
			out = append(out, w)
		case *appsv1.DaemonSet:
			out = append(out, workload{file: d.file, name: o.Name, selector: o.Spec.Selector, pod: o.Spec.Template})
		}
	}
	return out
}

func services(docs []document) map[string]*corev1.Service {
	out := map[string]*corev1.Service{}
	for _, d := range docs {
		if s, ok := d.obj.(*corev1.Service); ok {
			out[s.Name] = s
		}
	}
	return out
}

// selects says whether every label of sel is on labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

func TestWorkloadsAreSelectedSizedAndServed(t *testing.T) { forEachEntry(t, checkWorkloads) }

func checkWorkloads(t *testing.T, docs []document) {
	svcs := services(docs)
	wls := workloads(docs)
	if len(wls) == 0 {
		t.Fatal("no StatefulSet or DaemonSet")
	}
	for _, w := range wls {
		where := w.file + ": " + w.name
		if w.selector == nil || len(w.selector.MatchExpressions) > 0 || !selects(w.selector.MatchLabels, w.pod.Labels) {
			t.Errorf("%s: the selector does not select the pod template's labels %v", where, w.pod.Labels)
		}
		if w.serviceName != "" {
			s := svcs[w.serviceName]
			if s == nil || s.Spec.ClusterIP != corev1.ClusterIPNone || !selects(s.Spec.Selector, w.pod.Labels) {
				t.Errorf("%s: serviceName %q is not a headless Service selecting its pods", where, w.serviceName)
			}
		}
		for _, c := range w.pod.Spec.Containers {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
				if req.IsZero() || lim.IsZero() || req.Cmp(lim) > 0 {
					t.Errorf("%s: container %s: %s requests %s, limits %s; want both, requests at most limits", where, c.Name, r, &req, &lim)
				}
			}
			if !strings.HasPrefix(c.Image, "allot:") {
				t.Errorf("%s: container %s: image %q; the kustomizations' images entry renames allot", where, c.Name, c.Image)
			}
			if w.pod.Spec.AutomountServiceAccountToken == nil || *w.pod.Spec.AutomountServiceAccountToken {
				t.Errorf("%s: automountServiceAccountToken is not false: the server and the tasks need no Kubernetes API token", where)
			}
		}
	}
	// Each Service selects pods and reaches a port they have.
	for _, s := range svcs {
		var pods []corev1.PodTemplateSpec
		for _, w := range wls {
			if selects(s.Spec.Selector, w.pod.Labels) {
				pods = append(pods, w.pod)
			}
		}
		if len(pods) == 0 {
			t.Errorf("Service %s selects no pods", s.Name)
		}
		for _, p := range s.Spec.Ports {
			for _, pod := range pods {
				if containerPort(pod.Spec, p.TargetPort) == nil {
					t.Errorf("Service %s: port %s targets %s, which pods of %v do not have", s.Name, p.Name, p.TargetPort.String(), pod.Labels)
				}
			}
		}
	}
}

// containerPort is the port of a container of spec that target names.
func containerPort(spec corev1.PodSpec, target intstr.IntOrString) *corev1.ContainerPort {
	for _, c := range spec.Containers {
		for i, p := range c.Ports {
			if target.Type == intstr.String && p.Name == target.StrVal || target.Type == intstr.Int && p.ContainerPort == target.IntVal {
				return &c.Ports[i]
			}
		}
	}
	return nil
}

// argsOf are a container's subcommand and its arguments by flag: --flag=value or --flag value;
// a repeated flag keeps its values in order.
func argsOf(c corev1.Container) (sub string, flags map[string][]string) {
	flags = map[string][]string{}
	a := c.Args
	if len(a) > 0 && !strings.HasPrefix(a[0], "-") {
		sub, a = a[0], a[1:]
	}
	for i := 0; i < len(a); i++ {
		name, v, ok := strings.Cut(strings.TrimLeft(a[i], "-"), "=")
		if !ok && i+1 < len(a) && !strings.HasPrefix(a[i+1], "-") {
			v, i = a[i+1], i+1
		}
		flags[name] = append(flags[name], v)
	}
	return sub, flags
}

// podContainer is a container with the workload that runs it.
type podContainer struct {
	w workload
	c corev1.Container
}

// containers are the containers running `allot SUB`.
func containers(docs []document, sub string) []podContainer {
	var out []podContainer
	for _, w := range workloads(docs) {
		for _, c := range w.pod.Spec.Containers {
			if s, _ := argsOf(c); s == sub {
				out = append(out, podContainer{w, c})
			}
		}
	}
	return out
}

// servedGETs are the GET routes of the server, from its OpenAPI document,
// which the server's own tests hold to the routes it serves.
func servedGETs(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "internal", "api", "rest", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for p, methods := range doc.Paths {
		if _, ok := methods["get"]; ok {
			out[p] = true
		}
	}
	return out
}

func TestServerProbesAskTheServersOwnEndpoints(t *testing.T) { forEachEntry(t, checkServerProbes) }

func checkServerProbes(t *testing.T, docs []document) {
	served := servedGETs(t)
	servers := containers(docs, "server")
	if len(servers) == 0 {
		t.Fatal("no container runs allot server")
	}
	for _, s := range servers {
		where := s.w.file + ": " + s.w.name
		_, flags := argsOf(s.c)
		listen := flags["listen"]
		if len(listen) != 1 {
			t.Fatalf("%s: --listen %q; want one, on all addresses, for the probes and the Service", where, listen)
		}
		_, port, err := splitHostPort(listen[0])
		if err != nil {
			t.Fatalf("%s: --listen %q: %v", where, listen[0], err)
		}
		probes := []struct {
			name  string
			probe *corev1.Probe
			path  string // what it must ask
		}{
			// Liveness asks whether the process serves HTTP, not whether the
			// store takes writes: a full disk makes /readyz 503, and the
			// server resumes by itself once there is room, so restarting it
			// would not help.
			{"liveness", s.c.LivenessProbe, "/healthz"},
			{"readiness", s.c.ReadinessProbe, "/readyz"},
			{"startup", s.c.StartupProbe, "/healthz"},
		}
		for _, p := range probes {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: no %s probe over HTTP", where, p.name)
				continue
			}
			g := p.probe.HTTPGet
			if g.Path != p.path || !served[g.Path] {
				t.Errorf("%s: %s probe asks %s; want %s, which the server serves (GET routes: %v)", where, p.name, g.Path, p.path, slices.Sorted(maps.Keys(served)))
			}
			cp := containerPort(corev1.PodSpec{Containers: []corev1.Container{s.c}}, g.Port)
			if cp == nil || strconv.Itoa(int(cp.ContainerPort)) != port {
				t.Errorf("%s: %s probe's port %s is not the port the server listens on (%s)", where, p.name, g.Port.String(), port)
			}
			if g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP && len(flags["tls-cert"]) == 0 {
				t.Errorf("%s: %s probe over %s, but the server serves plain HTTP", where, p.name, g.Scheme)
			}
		}
	}
}

// splitHostPort splits HOST:PORT and checks the port is a number.
func splitHostPort(hp string) (string, string, error) {
	i := strings.LastIndex(hp, ":")
	if i < 0 {
		return "", "", fmt.Errorf("want HOST:PORT")
	}
	if _, err := strconv.Atoi(hp[i+1:]); err != nil {
		return "", "", fmt.Errorf("port %q is not a number", hp[i+1:])
	}
	return hp[:i], hp[i+1:], nil
}

func TestServerKeepsItsStoreAndSeveralShareOne(t *testing.T) { forEachEntry(t, checkServerStore) }

func checkServerStore(t *testing.T, docs []document) {
	for _, s := range containers(docs, "server") {
		where := s.w.file + ": " + s.w.name
		_, flags := argsOf(s.c)
		// The data directory (the embedded store, or with PostgreSQL the
		// lock and the admin token) outlives the pod: on a claim of the
		// StatefulSet.
		dd := flags["data-dir"]
		if len(dd) != 1 || !slices.ContainsFunc(s.c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return slices.Contains(s.w.claims, m.Name) && (dd[0] == m.MountPath || strings.HasPrefix(dd[0], strings.TrimSuffix(m.MountPath, "/")+"/"))
		}) {
			t.Errorf("%s: --data-dir %q is not on a volume claim of the StatefulSet (claims %v)", where, dd, s.w.claims)
		}
		if s.w.replicas <= 1 {
			continue
		}
		// One data directory is locked by one server: replicas share a
		// PostgreSQL store, and each tells clients where it leads.
		shared := len(flags["store"]) > 0 || slices.ContainsFunc(s.c.Env, func(e corev1.EnvVar) bool { return e.Name == "ALLOT_STORE" })
		if !shared {
			t.Errorf("%s: %d replicas without --store or ALLOT_STORE: each would open its own embedded store", where, s.w.replicas)
		}
		adv := flags["advertise"]
		if len(adv) != 1 {
			t.Errorf("%s: %d replicas without --advertise: standbys could not send clients to the leader", where, s.w.replicas)
			continue
		}
		for i := range s.w.replicas {
			vars := map[string]string{}
			for _, e := range s.c.Env {
				if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
					vars[e.Name] = fmt.Sprintf("%s-%d", s.w.name, i)
				}
			}
			u, err := expand(adv[0], vars)
			if err != nil {
				t.Errorf("%s: --advertise %s: %v", where, adv[0], err)
				continue
			}
			host, port, err := splitHostPort(strings.TrimPrefix(u, "http://"))
			if err != nil || !reachable(host, port, docs) || !strings.HasPrefix(host, fmt.Sprintf("%s-%d.", s.w.name, i)) {
				t.Errorf("%s: replica %d advertises %s, which is not that replica's own name", where, i, u)
			}
		}
	}
}

// workerGraceDefault is the default of `allot worker --grace`, read from
// the image's binary's help.
func workerGraceDefault(t *testing.T) time.Duration {
	t.Helper()
	b := imageBinary(t)
	out, err := exec.Command(b.binary, "worker", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("allot worker --help: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`--grace duration .*\(default ([0-9a-zµ.]+)\)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("allot worker --help shows no default for --grace:\n%s", out)
	}
	d, err := time.ParseDuration(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stopMargin is what a pod's termination grace must leave beyond the
// agent's own stop: its SIGKILLed tasks' exit and the kubelet's delays.
const stopMargin = 5 * time.Second

func TestWorkerTerminationGraceOutlastsTheAgentsStop(t *testing.T) { forEachEntry(t, checkWorkerGrace) }

func checkWorkerGrace(t *testing.T, docs []document) {
	workers := containers(docs, "worker")
	if len(workers) == 0 {
		t.Fatal("no container runs allot worker")
	}
	def := workerGraceDefault(t)
	if def != agent.DefaultGrace {
		t.Errorf("allot worker --grace defaults to %s, the agent to %s", def, agent.DefaultGrace)
	}
	for _, w := range workers {
		where := w.w.file + ": " + w.w.name
		grace := def
		_, flags := argsOf(w.c)
		if g := flags["grace"]; len(g) > 0 {
			var err error
			if grace, err = time.ParseDuration(g[len(g)-1]); err != nil {
				t.Fatalf("%s: --grace: %v", where, err)
			}
		}
		stop := agent.ShutdownTime(grace)
		tgps := w.w.pod.Spec.TerminationGracePeriodSeconds
		if tgps == nil {
			t.Errorf("%s: no terminationGracePeriodSeconds (Kubernetes' default is 30 s); the agent takes up to %s to stop with --grace %s", where, stop, grace)
			continue
		}
		if got := time.Duration(*tgps) * time.Second; got < stop+stopMargin {
			t.Errorf("%s: terminationGracePeriodSeconds %d; the agent takes up to %s to stop with --grace %s (tasks' grace, then their reports): want at least %s",
				where, *tgps, stop, grace, stop+stopMargin)
		}
	}
}

func TestShutdownTimeCoversTheTasksAndTheirReports(t *testing.T) {
	tests := []struct{ grace, want time.Duration }{
		{0, 2 * agent.DefaultGrace},
		{15 * time.Second, 30 * time.Second},
		{time.Second, 4 * time.Second}, // the reports get 3 s at least
	}
	for _, tt := range tests {
		if got := agent.ShutdownTime(tt.grace); got != tt.want {
			t.Errorf("ShutdownTime(%s) = %s, want %s", tt.grace, got, tt.want)
		}
	}
}

// expand replaces $(NAME) as Kubernetes does in args, from vars.
func expand(s string, vars map[string]string) (string, error) {
	var err error
	out := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).ReplaceAllStringFunc(s, func(m string) string {
		v, ok := vars[m[2:len(m)-1]]
		if !ok {
			err = fmt.Errorf("%s is not in the container's env", m)
		}
		return v
	})
	return out, err
}

// tokenPattern is the --worker pattern the worker token is made with, as
// worker-token.yaml says.
func tokenPattern(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(manifestDir, "worker-token.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--worker '([^']+)'`).FindSubmatch(data)
	if m == nil {
		t.Fatal("worker-token.yaml does not say the --worker pattern of the token")
	}
	return string(m[1])
}

func TestWorkersGetStableValidNamesAndTheirToken(t *testing.T) {
	forEachEntry(t, checkWorkerNamesAndTokens)
}

func checkWorkerNamesAndTokens(t *testing.T, docs []document) {
	pattern := tokenPattern(t)
	// The token's Secret is made by hand (worker-token.yaml), in no
	// kustomization.
	secrets := map[string]*corev1.Secret{}
	for _, d := range loadManifests(t) {
		if s, ok := d.obj.(*corev1.Secret); ok {
			secrets[s.Name] = s
		}
	}
	for _, w := range containers(docs, "worker") {
		where := w.w.file + ": " + w.w.name
		// What the downward API gives: the pod's name is the StatefulSet's
		// name and ordinal, a node's name may be a long DNS name.
		vars := map[string]string{}
		for _, e := range w.c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
				if w.w.serviceName == "" {
					t.Errorf("%s: %s is the pod's name, which is stable only in a StatefulSet", where, e.Name)
				}
				vars[e.Name] = fmt.Sprintf("%s-%d", w.w.name, w.w.replicas-1)
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
				vars[e.Name] = "ip-10-0-12-34.eu-west-1.compute.internal"
			default:
				vars[e.Name] = e.Value
			}
		}
		_, flags := argsOf(w.c)
		names := flags["name"]
		if len(names) != 1 {
			t.Errorf("%s: --name %q; want one: without it the worker is named after the pod's host name", where, names)
			continue
		}
		name, err := expand(names[0], vars)
		if err != nil {
			t.Errorf("%s: --name %s: %v", where, names[0], err)
		}
		if !model.ValidName(name) {
			t.Errorf("%s: --name %s gives %q, which the server refuses: %s", where, names[0], name, model.NameRule)
		}
		if p, ok := strings.CutSuffix(pattern, "*"); !ok && name != pattern || ok && !strings.HasPrefix(name, p) {
			t.Errorf("%s: worker name %q does not match the token's --worker %q", where, name, pattern)
		}
		// The token file is a key of the token Secret, readable by the
		// agent's user only.
		tf := flags["token-file"]
		if len(tf) != 1 {
			t.Errorf("%s: --token-file %q; want one (ALLOT_TOKEN from a secretKeyRef also works, but shows in the agent's environment until it sheds it)", where, tf)
			continue
		}
		var found bool
		for _, m := range w.c.VolumeMounts {
			rel, ok := strings.CutPrefix(tf[0], strings.TrimSuffix(m.MountPath, "/")+"/")
			if !ok {
				continue
			}
			for _, v := range w.w.pod.Spec.Volumes {
				if v.Name != m.Name || v.Secret == nil {
					continue
				}
				found = true
				s := secrets[v.Secret.SecretName]
				if s == nil {
					t.Errorf("%s: volume %s mounts Secret %s, which no manifest makes", where, v.Name, v.Secret.SecretName)
				} else if _, ok := s.StringData[rel]; !ok {
					t.Errorf("%s: --token-file %s: Secret %s has no key %q", where, tf[0], s.Name, rel)
				}
				switch m := v.Secret.DefaultMode; {
				case m == nil:
					t.Errorf("%s: Secret volume %s: no defaultMode; Kubernetes' 0644 lets others read the token, which the agent refuses (want 0400)", where, v.Name)
				case *m&0o077 != 0:
					t.Errorf("%s: Secret volume %s: defaultMode %#o lets group or others read the token, which the agent refuses (want 0400)", where, v.Name, *m)
				}
			}
		}
		if !found {
			t.Errorf("%s: --token-file %s is not in a Secret volume", where, tf[0])
		}
		// The server URL is a Service of the manifests, on a port it has.
		for _, u := range strings.Split(strings.Join(flags["server"], ","), ",") {
			host, port, err := splitHostPort(strings.TrimPrefix(u, "http://"))
			if err != nil {
				t.Errorf("%s: --server %s: %v", where, u, err)
				continue
			}
			if !reachable(host, port, docs) {
				t.Errorf("%s: --server %s is no Service and port of the manifests, nor a pod of a StatefulSet behind one", where, u)
			}
		}
	}
}

func TestContainerArgsAreWhatAllotTakes(t *testing.T) { forEachEntry(t, checkArgs) }

// checkArgs runs the image's binary with each container's arguments and
// --help: the command parses its flags, and their values (a duration, a
// number), before it shows the help, so a misspelt flag or a bad value
// fails here rather than in a crash-looping pod.
func checkArgs(t *testing.T, docs []document) {
	b := imageBinary(t)
	for _, w := range workloads(docs) {
		for _, c := range w.pod.Spec.Containers {
			vars := map[string]string{}
			for _, e := range c.Env {
				vars[e.Name] = "x" + e.Value // a downward API value: any name
			}
			args := make([]string, len(c.Args))
			for i, a := range c.Args {
				var err error
				if args[i], err = expand(a, vars); err != nil {
					t.Errorf("%s: %s: container %s: %v", w.file, w.name, c.Name, err)
				}
			}
			if len(c.Command) > 0 {
				t.Errorf("%s: %s: container %s sets command %q: the image's entry point runs allot", w.file, w.name, c.Name, c.Command)
			}
			out, err := exec.Command(b.binary, append(args, "--help")...).CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s: container %s: allot %s: %v\n%s", w.file, w.name, c.Name, strings.Join(c.Args, " "), err, firstLines(out, 3))
			}
		}
	}
}

// firstLines is the start of a command's output.
func firstLines(out []byte, n int) string {
	lines := strings.SplitAfterN(string(out), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "")
}

// reachable says whether HOST:PORT of a URL names a Service of docs on one
// of its ports (SERVICE, SERVICE.NAMESPACE...), or a pod of a StatefulSet by
// the name its headless Service gives it (POD.SERVICE...).
func reachable(host, port string, docs []document) bool {
	svcs := services(docs)
	hasPort := func(s *corev1.Service) bool {
		return s != nil && slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
	}
	labels := strings.Split(host, ".")
	if hasPort(svcs[labels[0]]) {
		return true
	}
	if len(labels) < 2 || !hasPort(svcs[labels[1]]) || svcs[labels[1]].Spec.ClusterIP != corev1.ClusterIPNone {
		return false
	}
	for _, w := range workloads(docs) {
		if w.serviceName != labels[1] {
			continue
		}
		ord, ok := strings.CutPrefix(labels[0], w.name+"-")
		if n, err := strconv.Atoi(ord); ok && err == nil && n >= 0 && int32(n) < w.replicas {
			return true
		}
	}
	return false
}

func TestTheBinaryLinksNoKubernetesPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "../cmd/allot").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for p := range strings.Lines(string(out)) {
		if strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
			t.Errorf("cmd/allot links %s: the manifests' checks must stay in tests", strings.TrimSpace(p))
		}
	}
}
