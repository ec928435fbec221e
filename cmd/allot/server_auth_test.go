package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/allot-sched/allot/internal/agent"
	"github.com/allot-sched/allot/internal/api"
	"github.com/allot-sched/allot/internal/auth"
	"github.com/allot-sched/allot/internal/client"
	"github.com/allot-sched/allot/internal/spec"
)

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key to dir, and returns the two paths. The certificate is its own CA.
func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "allot test server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// syncLog is a log destination the test reads while the server writes.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serve starts a server as allot server does and stops it when the test ends.
func serve(t *testing.T, cfg spec.ServerConfig, opt serverOptions) (*runningServer, *syncLog) {
	t.Helper()
	logs := &syncLog{}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, cfg, slog.New(slog.NewTextHandler(logs, nil)), opt)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return srv, logs
}

func TestServerWithTLSAndAuthTrustsOnlyItsCAAndTokens(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, t.TempDir())
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir,
		TLS: spec.TLSSettings{Cert: certFile, Key: keyFile}}}
	srv, logs := serve(t, cfg, serverOptions{auth: true})
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("URL %s, want https", srv.URL)
	}
	raw, err := os.ReadFile(filepath.Join(dir, auth.AdminTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(raw))
	if info, _ := os.Stat(filepath.Join(dir, auth.AdminTokenFile)); info.Mode().Perm() != 0o600 {
		t.Errorf("admin.token mode %o, want 600", info.Mode().Perm())
	}
	if !strings.Contains(logs.String(), auth.AdminTokenFile) || strings.Contains(logs.String(), admin) {
		t.Errorf("the log must name the token file and never the secret:\n%s", logs.String())
	}
	pool, err := client.LoadCA(certFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c, _ := client.New(srv.URL, client.WithToken(admin), client.WithRootCAs(pool))
	if _, err := c.Queues(ctx); err != nil {
		t.Fatalf("admin over TLS with the CA: %v", err)
	}
	untrusting, _ := client.New(srv.URL, client.WithToken(admin))
	if _, err := untrusting.Queues(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v, want a certificate error", err)
	}
	plain, _ := client.New(strings.Replace(srv.URL, "https://", "http://", 1), client.WithToken(admin))
	if _, err := plain.Queues(ctx); err == nil {
		t.Error("plain HTTP to the TLS port succeeded")
	}
	anonymous, _ := client.New(srv.URL, client.WithRootCAs(pool))
	if err := anonymous.Health(ctx); err != nil {
		t.Errorf("health without a token: %v", err)
	}
	if _, err := anonymous.Queues(ctx); !client.IsUnauthorized(err) {
		t.Errorf("queues without a token: %v, want unauthorized", err)
	}

	// A worker agent with a worker token and the CA registers over TLS; a
	// worker token for other names is refused at once.
	wt, err := c.CreateToken(ctx, api.CreateToken{Role: "worker", Workers: []string{"tls-*"}})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wrong, err := agent.New(agent.Config{Server: srv.URL, Token: wt.Secret, RootCAs: pool, Name: "other-1", Logger: quiet,
		Resources: spec.Resources{CPU: 1000, Memory: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Run(ctx); err == nil || !strings.Contains(err.Error(), `worker "other-1" is not allowed`) {
		t.Errorf("agent with a token for other names: %v", err)
	}
	a, err := agent.New(agent.Config{Server: srv.URL, Token: wt.Secret, RootCAs: pool, Name: "tls-1", Logger: quiet,
		Resources: spec.Resources{CPU: 1000, Memory: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ws, err := c.Workers(ctx)
		if err == nil && len(ws) == 1 && ws[0].Name == "tls-1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never registered over TLS: %v %v", ws, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServerRestartKeepsTheFirstAdminToken(t *testing.T) {
	dir := t.TempDir()
	cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir}}
	file := filepath.Join(dir, auth.AdminTokenFile)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{auth: true})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(file)
	cancel()
	if err := srv.Wait(); err != nil {
		t.Fatal(err)
	}
	srv, logs := serve(t, cfg, serverOptions{auth: true})
	if again, _ := os.ReadFile(file); !bytes.Equal(first, again) {
		t.Error("a restart replaced admin.token")
	}
	if strings.Contains(logs.String(), "created the first admin token") {
		t.Error("a restart created another admin token")
	}
	c, _ := client.New(srv.URL, client.WithToken(strings.TrimSpace(string(first))))
	ts, err := c.Tokens(t.Context())
	if err != nil || len(ts) != 1 || ts[0].Role != "admin" {
		t.Fatalf("tokens after a restart: %+v, %v", ts, err)
	}
}

func TestServerWithoutAuthCreatesNoToken(t *testing.T) {
	dir := t.TempDir()
	srv, _ := serve(t, spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: dir}}, serverOptions{})
	c, _ := client.New(srv.URL)
	if _, err := c.Queues(t.Context()); err != nil {
		t.Fatalf("no-auth server refused an anonymous call: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, auth.AdminTokenFile)); !os.IsNotExist(err) {
		t.Errorf("admin.token written without auth: %v", err)
	}
}

func TestServerTLSNeedsBothFiles(t *testing.T) {
	certFile, _ := writeSelfSigned(t, t.TempDir())
	for _, tls := range []spec.TLSSettings{{Cert: certFile}, {Key: certFile}, {Cert: certFile, Key: certFile + ".missing"}} {
		cfg := spec.ServerConfig{Server: spec.ServerSettings{Listen: "127.0.0.1:0", DataDir: t.TempDir(), TLS: tls}}
		if _, err := startServerWith(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), serverOptions{}); err == nil ||
			!strings.Contains(err.Error(), "server.tls") {
			t.Errorf("TLS %+v: %v, want a server.tls error", tls, err)
		}
	}
}

func TestDevWithoutAuthListensOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		listen string
		ok     bool
	}{
		{"127.0.0.1:7070", true}, {"[::1]:7070", true}, {"localhost:7070", true},
		{"0.0.0.0:7070", false}, {":7070", false}, {"10.1.2.3:7070", false}, {"nonsense", false},
	} {
		if got := loopback(tc.listen); got != tc.ok {
			t.Errorf("loopback(%q) = %v, want %v", tc.listen, got, tc.ok)
		}
	}
	cmd := newDevCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--listen", "0.0.0.0:0"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--auth") {
		t.Errorf("dev on 0.0.0.0 without --auth: %v", err)
	}
}

// The token in the environment is a secret: --help must not print it as
// the flag's default.
func TestHelpDoesNotPrintTheTokenFromTheEnvironment(t *testing.T) {
	t.Setenv("ALLOT_TOKEN", "allot_do_not_print_me")
	for _, args := range [][]string{{"list", "--help"}, {"worker", "--help"}, {"endpoints", "--help"}} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "--token") || strings.Contains(out.String(), "do_not_print_me") {
			t.Errorf("allot %s prints the token (or no --token flag):\n%s", strings.Join(args, " "), out.String())
		}
	}
}

// With authentication off the server answers to its listen address's and
// advertised URL's hosts besides the loopback ones (rest.Options.Hosts).
func TestServerHostsAreTheListenAndAdvertisedHosts(t *testing.T) {
	for _, tc := range []struct {
		listen, advertise string
		want              []string
	}{
		{"127.0.0.1:7070", "", []string{"127.0.0.1:7070"}},
		{"0.0.0.0:7070", "https://allot-1.internal:7070", []string{"0.0.0.0:7070", "allot-1.internal:7070"}},
		{":7070", "not a url", []string{":7070"}},
	} {
		if got := serverHosts(tc.listen, tc.advertise); !slices.Equal(got, tc.want) {
			t.Errorf("serverHosts(%q, %q) = %q, want %q", tc.listen, tc.advertise, got, tc.want)
		}
	}
}
