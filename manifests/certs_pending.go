package manifests

func selfManagedRBAC() []any { return nil }
