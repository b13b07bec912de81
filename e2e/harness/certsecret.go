package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"
)

// ensureCertSecret creates the empty Secret that self-managed certificates
// are kept in, as the self-managed-certs overlay ships it, in Steward's
// namespace, unless it exists: Steward fills it but may not create it.
// --cert-secret in args renames it.
func (e *Env) ensureCertSecret(ctx context.Context, namespace string, args []string) error {
	secret := &corev1.Secret{}
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	path := filepath.Join(root, "manifests", "overlays", "self-managed-certs", "secret.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the self-managed certificate Secret (run `make generate`): %w", err)
	}
	if err := yaml.UnmarshalStrict(data, secret); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if name, ok := flagValue(args, "cert-secret"); ok {
		secret.Name = name
	}
	secret.Namespace = namespace
	if err := e.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Secret %s/%s for self-managed certificates: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}
