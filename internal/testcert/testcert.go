// Package testcert makes a throwaway certificate authority and a
// certificate it signed for 127.0.0.1, for tests that serve TLS on loopback
// and need a client that trusts only that authority (a private CA).
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a private certificate authority and one server certificate it
// issued for 127.0.0.1 and localhost. It is immutable and safe for
// concurrent use; each config it returns is a new one.
type CA struct {
	pool *x509.CertPool
	leaf tls.Certificate
	der  []byte // the CA's own certificate
}

// New makes a CA valid for a day and its server certificate.
func New() (*CA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "resilientmcp test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &CA{pool: pool, leaf: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der: caDER}, nil
}

// ServerConfig is a TLS config serving the certificate, offering h2 and
// http/1.1 by ALPN.
func (ca *CA) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.leaf}, NextProtos: []string{"h2", "http/1.1"}}
}

// ClientConfig is a TLS config that trusts only the CA.
func (ca *CA) ClientConfig() *tls.Config { return &tls.Config{RootCAs: ca.pool} }

// Pool is the CA as a certificate pool.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// WritePEM writes the server certificate, the CA's certificate and the
// server's key into one PEM file in dir (0600), as HAProxy's "crt" takes
// them, and returns its path.
func (ca *CA) WritePEM(dir string) (string, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.leaf.PrivateKey)
	if err != nil {
		return "", err
	}
	var out []byte
	for _, b := range []*pem.Block{
		{Type: "CERTIFICATE", Bytes: ca.leaf.Certificate[0]},
		{Type: "CERTIFICATE", Bytes: ca.der},
		{Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		out = append(out, pem.EncodeToMemory(b)...)
	}
	file := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		return "", fmt.Errorf("testcert: %w", err)
	}
	return file, nil
}
