package certs

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// webhookConfig gives the validating and mutating configurations one shape:
// both hold a list of webhooks, each with its own clientConfig.caBundle.
type webhookConfig interface {
	object() client.Object
	// bundles returns every webhook's caBundle.
	bundles() [][]byte
	// setBundle puts bundle into every webhook's clientConfig.
	setBundle(bundle []byte)
}

type validatingConfig struct {
	*admissionregistrationv1.ValidatingWebhookConfiguration
}

func (c validatingConfig) object() client.Object { return c.ValidatingWebhookConfiguration }

func (c validatingConfig) bundles() [][]byte {
	var out [][]byte
	for _, w := range c.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func (c validatingConfig) setBundle(bundle []byte) {
	for i := range c.Webhooks {
		c.Webhooks[i].ClientConfig.CABundle = bundle
	}
}

type mutatingConfig struct {
	*admissionregistrationv1.MutatingWebhookConfiguration
}

func (c mutatingConfig) object() client.Object { return c.MutatingWebhookConfiguration }

func (c mutatingConfig) bundles() [][]byte {
	var out [][]byte
	for _, w := range c.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func (c mutatingConfig) setBundle(bundle []byte) {
	for i := range c.Webhooks {
		c.Webhooks[i].ClientConfig.CABundle = bundle
	}
}
