package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/allot-sched/allot/internal/client"
)

// adviseAll makes every command of the tree turn the errors a user meets
// first (nothing listening, a web page where the API should be, a missing
// token) into errors that say what to do. The wrapping is done once here,
// so that a command added later gets it too.
func adviseAll(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return advise(c, run(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		adviseAll(sub)
	}
}

// advise returns err with what to do about it when it is one of the
// errors advise knows, else err unchanged.
func advise(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	server := flagValue(cmd, "server")
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("no Allot server answers at %s (connection refused): start one (allot dev, or allot server), "+
			"or point --server or ALLOT_SERVER at the one you use", serverOf(err, server))
	case errors.As(err, &ue) && isNoSuchHost(err):
		return fmt.Errorf("cannot find the host of %s (%w): check --server or ALLOT_SERVER", serverOf(err, server), err)
	case client.IsForeign(err):
		return fmt.Errorf("%s is not an Allot server (%s): check --server or ALLOT_SERVER, which should be the URL "+
			"allot server or allot dev prints, like http://%s", server, foreignWhat(err), defaultListen)
	case client.IsUnauthorized(err) && cmd.Flags().Lookup("token") != nil:
		if tokenGiven(cmd) {
			return fmt.Errorf("the server refused the token (%w): check --token or ALLOT_TOKEN; it may be revoked or expired "+
				"(allot tokens list shows which)", err)
		}
		return errors.New("the server needs a token (unauthorized, HTTP 401): give one with --token or the environment variable " +
			"ALLOT_TOKEN (the first admin's is in the server's DATA_DIR/admin.token; allot tokens create makes others)")
	case errors.As(err, &ue) && strings.HasPrefix(ue.Err.Error(), "tls:") || strings.Contains(err.Error(), "http: server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w: does the server at %s speak TLS? Use http:// for a server without --tls-cert, https:// (and --ca) for one with it",
			err, server)
	}
	return err
}

// flagValue is the value of cmd's flag name, "" if it has none.
func flagValue(cmd *cobra.Command, name string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// tokenGiven reports whether a client command had a token: --token, or
// ALLOT_TOKEN when the flag is not given.
func tokenGiven(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("token")
	if tf, ok := f.Value.(*tokenFlag); ok {
		return tf.value() != ""
	}
	return f.Value.String() != ""
}

// serverOf is the scheme and host a transport error was about, or the
// --server value when it names none.
func serverOf(err error, server string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return server
}

func isNoSuchHost(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}

// foreignWhat says what the foreign answer was, without printing a page.
func foreignWhat(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("it answered HTTP %d with a page that is not an API error", e.Status)
	}
	return "its answer is not the API's JSON"
}
