package main

// TLS listener: -tlsCertificateKeyFile names one PEM file holding the server's certificate
// chain and its key, as mongod's --tlsCertificateKeyFile does. The file is read at start and
// again on rotateCertificates (what mongod does since 5.0): handshakes after a rotation present
// the new certificate, connections already open keep theirs.

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync/atomic"
)

type certificates struct {
	file    string
	current atomic.Pointer[tls.Certificate]
}

func loadCertificates(file string) (*certificates, error) {
	c := &certificates{file: file}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the file again; on error the certificate in use stays.
func (c *certificates) reload() error {
	pem, err := os.ReadFile(c.file)
	if err != nil {
		return err
	}
	pair, err := tls.X509KeyPair(pem, pem)
	if err != nil {
		return fmt.Errorf("%s: %w", c.file, err)
	}
	c.current.Store(&pair)
	return nil
}

func (c *certificates) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}
