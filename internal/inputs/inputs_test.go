package inputs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInputAllowListLimitsWhatTheServerChecks(t *testing.T) {
	ic, err := New([]string{"/data/images", "file:///srv/shared/", "https://tiles.example.com/public"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		input string
		ok    bool
	}{
		{"/data/images/a.tif", true},
		{"/data/images", true},
		{"file:///data/images/sub/b.tif", true},
		{"file://localhost/srv/shared/c.png", true},
		{"/data/imagesX/a.tif", false},             // a sibling, not inside
		{"/data/images/../secrets/key.pem", false}, // cleaned first
		{"images/a.tif", false},                    // relative
		{"/etc/passwd", false},
		{"https://tiles.example.com/public/z/1.png", true},
		{"https://TILES.example.com/public/z/1.png", true},
		{"http://tiles.example.com/public/z/1.png", false}, // another scheme
		{"https://tiles.example.com.evil.org/public/1.png", false},
		{"https://tiles.example.com/private/1.png", false},
		{"http://169.254.169.254/latest/meta-data/", false},
		{"s3://bucket/key", false},
	}
	for _, tc := range cases {
		err := ic.Permitted(tc.input)
		if (err == nil) != tc.ok {
			t.Errorf("Permitted(%q) = %v, want allowed %v", tc.input, err, tc.ok)
		}
	}
	open, _ := New(nil)
	if err := open.Permitted("/anything/at/all"); err != nil {
		t.Errorf("no allow list: %v, want every input allowed", err)
	}
	for i, bad := range []string{"relative/dir", "ftp://host/x", "https:///nohost", "file://otherhost/x"} {
		if _, err := New([]string{"/ok", bad}); err == nil || !strings.Contains(err.Error(), "server.inputs.allow[1]") {
			t.Errorf("case %d: allow entry %q: %v, want an error naming server.inputs.allow[1]", i, bad, err)
		}
	}
}

func TestInputCheckDoesNotFollowARedirectOutsideTheAllowList(t *testing.T) {
	inside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/public/moved.tif" {
			http.Redirect(w, r, "http://127.0.0.1:1/private/secret", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer inside.Close()
	ic, err := New([]string{inside.URL + "/public"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ic.CheckInput(context.Background(), inside.URL+"/public/ok.tif"); err != nil {
		t.Errorf("an allowed URL: %v", err)
	}
	err = ic.CheckInput(context.Background(), inside.URL+"/public/moved.tif")
	if err == nil || !strings.Contains(err.Error(), "server.inputs.allow") {
		t.Errorf("a redirect out of the allow list: %v, want it refused", err)
	}
}

// A link inside an allowed directory does not lead the check outside it:
// the file the server would open, with links and ".." resolved as the
// system resolves them, must lie under an allowed directory too. A link
// that stays inside, and an allowed directory that is itself a link, pass.
func TestInputCheckDoesNotFollowALinkOutsideTheAllowList(t *testing.T) {
	tiff := []byte("II*\x00 a valid header")
	root := t.TempDir()
	allowed, outside := filepath.Join(root, "allowed"), filepath.Join(root, "outside")
	for _, d := range []string{allowed, outside, filepath.Join(outside, "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, tiff, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(allowed, "in.tif"))
	write(filepath.Join(outside, "secret.tif"))
	link(filepath.Join(outside, "secret.tif"), filepath.Join(allowed, "escape.tif"))
	link(outside, filepath.Join(allowed, "dir"))
	link(filepath.Join(outside, "deep"), filepath.Join(allowed, "deep"))
	link(filepath.Join(allowed, "in.tif"), filepath.Join(allowed, "alias.tif"))
	link(allowed, filepath.Join(root, "via")) // an allowed directory that is a link
	via, err := New([]string{filepath.Join(root, "via")})
	if err != nil {
		t.Fatal(err)
	}
	if err := via.CheckInput(context.Background(), filepath.Join(root, "via", "in.tif")); err != nil {
		t.Errorf("a file under an allowed directory that is a link: %v, want it readable", err)
	}
	ic, err := New([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		input string
		ok    bool
	}{
		{filepath.Join(allowed, "in.tif"), true},
		{filepath.Join(allowed, "alias.tif"), true},
		{filepath.Join(allowed, "escape.tif"), false},
		{"file://" + filepath.Join(allowed, "escape.tif"), false},
		{filepath.Join(allowed, "dir", "secret.tif"), false},
		// Lexically allowed/secret.tif; the system goes up from outside/deep.
		{filepath.Join(allowed, "deep") + "/../secret.tif", false},
	}
	for _, tc := range cases {
		err := ic.CheckInput(context.Background(), tc.input)
		if tc.ok && err != nil {
			t.Errorf("CheckInput(%q) = %v, want it readable", tc.input, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "server.inputs.allow")) {
			t.Errorf("CheckInput(%q) = %v, want it refused as outside server.inputs.allow", tc.input, err)
		}
	}
}
