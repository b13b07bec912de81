package webhookserver

import "crypto/tls"

// aeadSuites are the TLS 1.2 cipher suites Steward accepts: ECDHE key
// exchange with AES-GCM or ChaCha20-Poly1305, the suites Mozilla's
// "intermediate" profile keeps. Go's defaults also accept CBC suites with
// SHA-1, which are open to padding-oracle attacks. TLS 1.3 has only AEAD
// suites and ignores the list.
func aeadSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// tlsOptions hardens a TLS listener (the webhook server's, the metrics
// endpoint's): TLS 1.2 or later with AEAD suites only, and HTTP/1.1 only
// unless http2.
func tlsOptions(http2 bool) []func(*tls.Config) {
	opts := []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		c.CipherSuites = aeadSuites()
	}}
	if !http2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}
