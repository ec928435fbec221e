package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// LoadCA reads PEM certificates from path into a pool, to trust a server
// whose certificate a private CA signed (allot --ca, ALLOT_CA). The pool
// holds only these certificates, not the system's.
func LoadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("CA file " + path + ": no PEM certificate in it")
	}
	return pool, nil
}

// WithRootCAs makes the client trust the certificates in pool (and only
// them) for https servers. It replaces the HTTP client's transport with a
// copy of the client's default transport that uses them, so apply it after
// WithHTTPClient, if both are used.
func WithRootCAs(pool *x509.CertPool) Option {
	return func(c *Client) {
		tr := newTransport()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		hc := *c.hc
		hc.Transport = tr
		c.hc = &hc
	}
}
