package servedcache

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// AddToManager runs the Set with the manager and gates the manager's
// readiness on it under the check name readyzName.
func (s *Set) AddToManager(mgr manager.Manager, readyzName string) error {
	if err := mgr.Add(s); err != nil {
		return fmt.Errorf("adding %s informers to the manager: %w", s.name, err)
	}
	if err := mgr.AddReadyzCheck(readyzName, s.Ready); err != nil {
		return fmt.Errorf("adding readiness check %s: %w", readyzName, err)
	}
	return nil
}
