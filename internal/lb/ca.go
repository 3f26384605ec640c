// Package lb is the load-balancer rig of the end-to-end tests: a real
// HAProxy, started by PID with a generated configuration, terminating TLS
// with a throwaway CA (ALPN h2,http/1.1) in front of replicas of the test
// server, each a process of its own (the test binary run again), which can
// be restarted with SIGTERM and a drain, or killed with SIGKILL.
//
// It imports nothing of the client: the tests bring the client.
package lb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// CA is a throwaway certificate authority and the one server certificate it
// signed, for 127.0.0.1 and localhost.
type CA struct {
	// Pool holds the CA's certificate: what a client that trusts it
	// verifies the load balancer's certificate with.
	Pool *x509.CertPool
	// PEMFile is the server certificate, its key and the CA's certificate
	// in one PEM file, as HAProxy's "crt" takes them.
	PEMFile string
}

// NewCA makes a CA and a server certificate, valid for an hour, and writes
// the server's PEM file into dir.
func NewCA(dir string) (*CA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "resilientmcp test CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
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
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, b := range []*pem.Block{
		{Type: "CERTIFICATE", Bytes: der},
		{Type: "CERTIFICATE", Bytes: caDER},
		{Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		out = append(out, pem.EncodeToMemory(b)...)
	}
	file := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		return nil, fmt.Errorf("lb: writing the certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &CA{Pool: pool, PEMFile: file}, nil
}
