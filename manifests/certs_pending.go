package manifests

func certManagerObjects() []any { return nil }
func injectCAPatches() []any    { return nil }
func selfManagedRBAC() []any    { return nil }
